"""graphdojo domain library. Never imports Dagster; layers import only downward:
graph <- cypher <- tools <- (llm, quizzer, certify) <- rubric <- later layers."""
