"""Child process for the crash test: join a group, poll N records, never commit, wait to be killed."""

import sys
import time

from infra.bootstrap import open_bus

url, group, topic, expected = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
consumer = open_bus(url).consumer(group, [topic])
got = 0
deadline = time.monotonic() + 60
while got < expected and time.monotonic() < deadline:
    got += len(consumer.poll(max_records=500, timeout_s=0.5))
print(f"polled {got}", flush=True)
time.sleep(600)
