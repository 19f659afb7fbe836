"""The metrics engine: measures as values, vectorised kernels, the evaluation front door."""
