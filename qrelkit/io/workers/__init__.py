"""io's worker pools, in a room of their own: threads that work ahead of a consumer (`parallel`) and
spawned processes for CPU work that holds the interpreter lock (`processes`)."""
