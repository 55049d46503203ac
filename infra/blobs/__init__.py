"""The blob store port (content-addressed by sha256) and its adapters: S3 (minio client) and a local directory."""
