"""What the tests (and `bench/`) share: daemons, clients, waits and checks."""
