"""The secrets server's HTTP layer: one module per spec area, thin over the state classes."""
