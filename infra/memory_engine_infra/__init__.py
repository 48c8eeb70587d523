"""CDK constructs of memory-engine (AWS): one module per concern."""
