"""Traced tool environments: the Python + Cypher sandbox (GraphCert), the Graph-CoT function
API (GraphDancer) and the graph-IR solvers (GRAIN), behind one episode interface."""
