"""Mining sources: the directory source and sandboxed WebAssembly sources."""
