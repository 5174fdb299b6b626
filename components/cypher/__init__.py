"""Cypher for graphdojo: parsing, read-only safety, Neo4j→Ladybug compatibility, schema checks,
and :class:`ReadOnlyQueryPath` — the one path user- and model-written queries take to a backend.

    parse_query ─► check_read_only ─► check_schema ─► to_ladybug/to_neo4j ─► backend.run
"""

from components.cypher.compat import (
    LADYBUG_MAX_HOPS,
    SUPPORTED_FUNCTIONS,
    alias_return_columns,
    to_ladybug,
    to_neo4j,
)
from components.cypher.features import Derivation, DerivationError, derive, features_json
from components.cypher.parse import ParsedQuery, parse_query, render, tokenize
from components.cypher.query_path import ReadOnlyQueryPath, check_params
from components.cypher.safety import check_read_only, check_tree, scan_tokens
from components.cypher.schema_check import UsedTriple, check_schema, used_triples

__all__ = [
    "Derivation",
    "DerivationError",
    "LADYBUG_MAX_HOPS",
    "SUPPORTED_FUNCTIONS",
    "ParsedQuery",
    "ReadOnlyQueryPath",
    "UsedTriple",
    "alias_return_columns",
    "check_params",
    "check_read_only",
    "check_schema",
    "check_tree",
    "derive",
    "features_json",
    "parse_query",
    "render",
    "scan_tokens",
    "to_ladybug",
    "to_neo4j",
    "tokenize",
    "used_triples",
]
