"""Loopback servers for the remote-store tests and benchmark: a byte-range file server with fault
injection (range_server) and helpers around moto's S3 emulator (s3_server)."""
