"""Apache Kafka 4.x, single node KRaft (broker + controller in one JVM), from Maven Central jars.

Provision: ``mvn dependency:copy-dependencies`` on ``infra/stack/kafka/pom.xml`` into
``<cache>/kafka/<version>/lib`` (Maven repo in ``<cache>/m2``); skipped when the lib folder already
holds that version. Then the log dir is formatted once with ``kafka.tools.StorageTool`` using a
cluster id persisted in ``<stack>/kafka/cluster.id``.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import logging
import os
import re
import shlex
import shutil
import string
import subprocess
import tarfile
import time
import urllib.request
from pathlib import Path

from infra.stack.base import Echo, Service, StackError
from infra.stack.kafka import RESOURCES

MIN_JAVA = 17
MAVEN_CENTRAL = "https://repo.maven.apache.org/maven2"
# Used only when `mvn` is not on PATH: Apache Maven's binary distribution, itself served by Maven Central.
MAVEN_VERSION = "3.9.9"
MAVEN_SHA512 = (
    "a555254d6b53d267965a3404ecb14e53c3827c09c3b94b5678835887ab404556"
    "bfaf78dcfe03ba76fa2508649dca8531c74bca4d5846513522404d48e8c4ac8b"
)


def java_major_version(java: str = "java") -> int:
    """The major version of ``java`` on PATH; raises StackError when missing or unparsable."""
    exe = shutil.which(java)
    if exe is None:
        raise StackError(
            f"Java {MIN_JAVA}+ is required for Kafka but `{java}` is not on PATH. "
            "Install a JDK/JRE 17 or newer (Debian: apt-get install openjdk-17-jre-headless)."
        )
    try:
        out = subprocess.run([exe, "-version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise StackError(f"could not run `{exe} -version`: {exc}") from exc
    text = out.stderr + out.stdout
    match = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if not match:
        raise StackError(f"could not read the Java version from `{exe} -version`: {text.strip()!r}")
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8.0_392" -> 8
        major = int(match.group(2))
    return major


def new_cluster_id() -> str:
    """16 random bytes, base64url without padding (what ``kafka-storage.sh random-uuid`` prints)."""
    return base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")


def _bytes(size: str) -> int:
    """JVM size syntax (``768m``, ``1g``, ``524288k``, ``1073741824``) to bytes."""
    match = re.fullmatch(r"\s*(\d+)\s*([kKmMgGtT]?)\s*", size)
    if not match:
        raise StackError(f"invalid kafka_heap {size!r}; use JVM syntax such as 768m or 1g")
    scale = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}[match.group(2).lower()]
    return int(match.group(1)) * scale


class KafkaBroker(Service):
    name = "kafka"

    @property
    def url(self) -> str:
        return f"kafka://{self.settings.host}:{self.settings.kafka_port}"

    @property
    def bootstrap(self) -> str:
        return f"{self.settings.host}:{self.settings.kafka_port}"

    def ports(self) -> list[int]:
        return [self.settings.kafka_port, self.settings.kafka_controller_port]

    def listening(self) -> list[str]:
        s = self.settings
        return [
            f"{self.url}  (bootstrap {self.bootstrap}, controller {s.host}:{s.kafka_controller_port}, "
            f"KRaft {s.kafka_version})"
        ]

    # --- paths -----------------------------------------------------------------------------------
    @property
    def lib_dir(self) -> Path:
        return self.cache / "kafka" / self.settings.kafka_version / "lib"

    @property
    def m2_dir(self) -> Path:
        return self.cache / "m2"

    @property
    def data_dir(self) -> Path:
        return self.home / "data"

    @property
    def config_path(self) -> Path:
        return self.home / "server.properties"

    @property
    def cluster_id_path(self) -> Path:
        return self.home / "cluster.id"

    def _pom_digest(self) -> str:
        return hashlib.sha256((RESOURCES / "pom.xml").read_bytes()).hexdigest()[:16]

    def _lib_marker(self) -> str:
        return f"kafka={self.settings.kafka_version} pom={self._pom_digest()}\n"

    def lib_ready(self) -> bool:
        marker = self.lib_dir / ".provisioned"
        jar = self.lib_dir / f"kafka_2.13-{self.settings.kafka_version}.jar"
        return jar.is_file() and marker.is_file() and marker.read_text() == self._lib_marker()

    # --- provision -------------------------------------------------------------------------------
    def provision(self, echo: Echo) -> None:
        major = java_major_version()
        if major < MIN_JAVA:
            raise StackError(
                f"Kafka {self.settings.kafka_version} needs Java {MIN_JAVA}+, but `java` on PATH is "
                f"version {major}. Put a newer JDK first on PATH (or set JAVA_HOME/bin first)."
            )
        if self.lib_ready():
            echo(f"kafka: jars cached in {self.lib_dir}")
        else:
            # The cache may be shared by several stacks: one fetch at a time, re-checked under the lock.
            self.cache.mkdir(parents=True, exist_ok=True)
            with (self.cache / ".kafka-fetch.lock").open("w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if self.lib_ready():
                    echo(f"kafka: jars cached in {self.lib_dir}")
                else:
                    self._fetch_jars(echo)
        self._format(echo)

    def _fetch_jars(self, echo: Echo) -> None:
        mvn = self._maven(echo)
        echo(f"kafka: fetching Kafka {self.settings.kafka_version} jars from Maven Central ...")
        started = time.monotonic()
        tmp = self.lib_dir.with_name("lib.partial")
        shutil.rmtree(tmp, ignore_errors=True)
        self.m2_dir.mkdir(parents=True, exist_ok=True)
        cmd = [
            mvn, "-q", "-B", "-f", str(RESOURCES / "pom.xml"),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={tmp}",
            "-DincludeScope=runtime",
            f"-Dmaven.repo.local={self.m2_dir}",
            f"-Dkafka.version={self.settings.kafka_version}",
        ]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            out = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-40:])
            raise StackError(f"fetching the Kafka jars failed (exit {proc.returncode}): {' '.join(cmd)}\n{out}")
        if not (tmp / f"kafka_2.13-{self.settings.kafka_version}.jar").is_file():
            raise StackError(f"Maven finished but no kafka_2.13-{self.settings.kafka_version}.jar in {tmp}")
        (tmp / ".provisioned").write_text(self._lib_marker())
        shutil.rmtree(self.lib_dir, ignore_errors=True)
        tmp.rename(self.lib_dir)
        jars = len(list(self.lib_dir.glob("*.jar")))
        echo(f"kafka: {jars} jars in {self.lib_dir} ({time.monotonic() - started:.1f}s)")

    def _maven(self, echo: Echo) -> str:
        """``mvn`` from PATH, else Apache Maven's own binary distribution from Maven Central (cached)."""
        found = shutil.which("mvn")
        if found:
            return found
        home = self.cache / "maven" / f"apache-maven-{MAVEN_VERSION}"
        exe = home / "bin" / "mvn"
        if exe.is_file():
            return str(exe)
        url = f"{MAVEN_CENTRAL}/org/apache/maven/apache-maven/{MAVEN_VERSION}/apache-maven-{MAVEN_VERSION}-bin.tar.gz"
        echo(f"kafka: `mvn` not on PATH; fetching Apache Maven {MAVEN_VERSION} from {url}")
        archive = self.cache / "maven" / f"apache-maven-{MAVEN_VERSION}-bin.tar.gz"
        archive.parent.mkdir(parents=True, exist_ok=True)
        try:
            with urllib.request.urlopen(url, timeout=120) as resp, archive.open("wb") as out:  # noqa: S310
                shutil.copyfileobj(resp, out)
        except OSError as exc:
            raise StackError(
                f"Maven is needed once to fetch the Kafka jars; `mvn` is not on PATH and downloading {url} "
                f"failed: {exc}. Install Maven (Debian: apt-get install maven) or allow access to Maven Central."
            ) from exc
        digest = hashlib.sha512(archive.read_bytes()).hexdigest()
        if digest != MAVEN_SHA512:
            archive.unlink(missing_ok=True)
            raise StackError(f"checksum mismatch for {url}: got sha512 {digest}")
        with tarfile.open(archive) as tar:
            tar.extractall(home.parent, filter="data")
        archive.unlink(missing_ok=True)
        exe.chmod(0o755)
        return str(exe)

    def cluster_id(self) -> str:
        if self.cluster_id_path.is_file():
            return self.cluster_id_path.read_text().strip()
        cid = new_cluster_id()
        self.cluster_id_path.parent.mkdir(parents=True, exist_ok=True)
        self.cluster_id_path.write_text(cid + "\n")
        return cid

    def formatted(self) -> bool:
        return (self.data_dir / "meta.properties").is_file()

    def _format(self, echo: Echo) -> None:
        if self.formatted():
            return
        self.prepare()
        cid = self.cluster_id()
        cmd = [
            "java", "-Xmx256m", *self._jvm_opts(), *self._log_opts(), "-cp", self._classpath(),
            "kafka.tools.StorageTool", "format", "-g", f"--cluster-id={cid}", "-c", str(self.config_path),
        ]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0 or not self.formatted():
            raise StackError(
                f"formatting the Kafka log dir {self.data_dir} failed (exit {proc.returncode}):\n"
                f"{(proc.stdout + proc.stderr).strip()[-4000:]}"
            )
        echo(f"kafka: formatted {self.data_dir} (cluster id {cid})")

    # --- run -------------------------------------------------------------------------------------
    def _classpath(self) -> str:
        return str(self.lib_dir / "*")

    def _jvm_opts(self) -> list[str]:
        return shlex.split(self.settings.kafka_jvm_opts)

    def _log_opts(self) -> list[str]:
        return [
            f"-Dlog4j2.configurationFile={RESOURCES / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={self.root / 'logs'}",
        ]

    def prepare(self) -> None:
        if not self.lib_ready():
            raise StackError("Kafka is not provisioned; run `flywheel stack provision` first")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        template = string.Template((RESOURCES / "server-template.properties").read_text())
        rendered = template.substitute(
            host=self.settings.host,
            kafka_port=self.settings.kafka_port,
            controller_port=self.settings.kafka_controller_port,
            log_dir=str(self.data_dir),
        )
        self.config_path.write_text(rendered)

    def command(self) -> list[str]:
        heap = self.settings.kafka_heap
        initial = "128m" if _bytes(heap) >= 128 * 2**20 else heap
        return [
            "java",
            f"-Xmx{heap}",
            f"-Xms{initial}",
            *self._jvm_opts(),
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true",
            *self._log_opts(),
            "-cp",
            self._classpath(),
            "kafka.Kafka",
            str(self.config_path),
        ]

    def probe(self, timeout_s: float) -> None:
        # A metadata round trip through the admin API: the broker is up *and* the quorum has a leader.
        from kafka import KafkaAdminClient

        ms = max(1000, int(timeout_s * 1000))
        quiet = logging.getLogger("kafka")
        level = quiet.level
        quiet.setLevel(logging.CRITICAL)  # connection-refused noise while the broker boots
        try:
            admin = KafkaAdminClient(
                bootstrap_servers=self.bootstrap,
                client_id="flywheel-stack-probe",
                request_timeout_ms=ms,
                bootstrap_timeout_ms=ms,
                reconnect_backoff_max_ms=500,
            )
            try:
                admin.list_topics()
                admin.describe_cluster()
            finally:
                admin.close()
        finally:
            quiet.setLevel(level)
