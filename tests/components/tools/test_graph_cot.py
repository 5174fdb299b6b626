"""Graph-CoT functions on a real Ladybug graph, with hand-computed observations."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from components.graph.ladybug import LadybugBackend
from components.graph.load import load_graph
from components.graph.model import GraphData
from components.tools.graph_cot import ErrorCode, GraphCoT, Hop, resolve_neighbor_type
from components.tools.protocol import parse_call
from components.tools.retriever import NodeIndex, shared_embedder

NEIGHBOR_MISSING = (
    "The node or neighbor type does not exist in the graph. This might be because your given "
    "neighbor type is not correct. Please modify it."
)
FEATURE_MISSING = (
    "The node or feature name does not exist in the graph. This might be because your given "
    "feature name is not correct. Please modify it."
)


def library_graph() -> GraphData:
    """Authors, papers and venues.

    ann WROTE p1, p2; bob WROTE p2, p3; "smith, j" WROTE p3.
    p2 CITES p1; p3 CITES p1, p2.  p1, p2, "Venue:odd" PUBLISHED_IN kdd; p3 PUBLISHED_IN venue p1.
    The id "p1" exists twice (Paper and Venue), so it is written Paper:p1 / Venue:p1; the paper
    id "Venue:odd" looks label-qualified, so it is written Paper:Venue:odd.
    """
    g = GraphData()
    for aid, name, born in [("ann", "Ann Lee", 1970), ("bob", "Bob Stone", 1981), ("smith, j", "John Smith", 1990)]:
        g.add_node("Author", aid, {"name": name, "born": born})
    for pid, title, year, kw in [
        ("p1", "Graph Neural Networks", 2009, ["graphs", "learning"]),
        ("p2", "Attention Is All You Need", 2017, ["transformers"]),
        ("p3", "Knowledge Graph Embeddings", 2019, []),
        ("Venue:odd", "An Odd Paper", 2020, None),
    ]:
        g.add_node("Paper", pid, {"title": title, "year": year, "keywords": kw})
    g.add_node("Venue", "kdd", {"name": "KDD"})
    g.add_node("Venue", "p1", {"name": "Proceedings One"})
    for a, p in [("ann", "p1"), ("ann", "p2"), ("bob", "p2"), ("bob", "p3"), ("smith, j", "p3")]:
        g.add_rel("WROTE", ("Author", a), ("Paper", p))
    for a, b in [("p2", "p1"), ("p3", "p1"), ("p3", "p2")]:
        g.add_rel("CITES", ("Paper", a), ("Paper", b))
    for p, v in [("p1", "kdd"), ("p2", "kdd"), ("Venue:odd", "kdd"), ("p3", "p1")]:
        g.add_rel("PUBLISHED_IN", ("Paper", p), ("Venue", v))
    return g


@pytest.fixture(scope="module")
def library_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("library") / "db"
    load_graph(library_graph(), path)
    return path


@pytest.fixture(scope="module")
def backend(library_db: Path) -> Iterator[LadybugBackend]:
    with LadybugBackend(library_db) as b:
        yield b


@pytest.fixture(scope="module")
def index(backend: LadybugBackend) -> NodeIndex:
    return NodeIndex.open(backend, shared_embedder(threads=1), progress=False)


@pytest.fixture(scope="module")
def api(backend: LadybugBackend, index: NodeIndex) -> GraphCoT:
    return GraphCoT(backend, index=index)


def observe(api: GraphCoT, function: str, *args: str) -> str:
    return api.call(function, args).observation


# -- NodeFeature ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("ann", "name"), "The name feature of ann are: Ann Lee."),
        (("ann", "born"), "The born feature of ann are: 1970."),
        (("Author:ann", "NAME"), "The NAME feature of Author:ann are: Ann Lee."),
        (("Paper:p1", "title"), "The title feature of Paper:p1 are: Graph Neural Networks."),
        (("Venue:p1", "name"), "The name feature of Venue:p1 are: Proceedings One."),
        (("p2", "keywords"), "The keywords feature of p2 are: ['transformers']."),
        (("Paper:p1", "keywords"), "The keywords feature of Paper:p1 are: ['graphs', 'learning']."),
        (("p3", "id"), "The id feature of p3 are: p3."),
        (("Paper:Venue:odd", "title"), "The title feature of Paper:Venue:odd are: An Odd Paper."),
        # "Venue" is a label but Venue has no node "odd": the whole text is a (Paper) id.
        (("Venue:odd", "year"), "The year feature of Venue:odd are: 2020."),
        (("smith, j", "name"), "The name feature of smith, j are: John Smith."),
    ],
)
def test_node_feature(api: GraphCoT, args: tuple[str, str], expected: str) -> None:
    call = api.call("NodeFeature", args)
    assert call.observation == expected
    assert call.error is None and call.node_ids == ()


def test_node_feature_errors(api: GraphCoT) -> None:
    unknown_node = api.node_feature("zed", "name")
    assert unknown_node.observation == FEATURE_MISSING
    assert unknown_node.error is not None and unknown_node.error.code is ErrorCode.UNKNOWN_NODE
    unknown_feature = api.node_feature("ann", "height")
    assert unknown_feature.observation == FEATURE_MISSING
    assert unknown_feature.error is not None and unknown_feature.error.code is ErrorCode.UNKNOWN_FEATURE
    ambiguous = api.node_feature("p1", "name")
    assert ambiguous.error is not None and ambiguous.error.code is ErrorCode.AMBIGUOUS_NODE
    assert ambiguous.observation == (
        "The node ID p1 matches several nodes: Paper:p1, Venue:p1. Please use one of these IDs."
    )


# -- NeighborCheck ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected_ids"),
    [
        (("p2", "CITES"), ["Paper:p1"]),  # outgoing by default
        (("p2", "cites->"), ["Paper:p1"]),
        (("Paper:p1", "<-CITES"), ["p2", "p3"]),  # incoming
        (("Paper:p1", "CITES<-"), ["p2", "p3"]),
        (("p2", "-CITES-"), ["Paper:p1", "p3"]),  # both directions
        (("p2", "<-CITES->"), ["Paper:p1", "p3"]),
        (("p2", "WROTE"), ["ann", "bob"]),  # Paper has only incoming WROTE: followed incoming
        (("p2", "author"), ["ann", "bob"]),  # a label: every type joining the two labels
        (("p2", "Authors"), ["ann", "bob"]),
        (("ann", "paper"), ["Paper:p1", "p2"]),
        (("ann", "WROTE"), ["Paper:p1", "p2"]),
        (("p3", "paper"), ["Paper:p1", "p2"]),  # CITES out (p1, p2) and in (none)
        (("p2", "Paper"), ["Paper:p1", "p3"]),
        (("kdd", "paper"), ["Paper:Venue:odd", "Paper:p1", "p2"]),
        (("Venue:p1", "PUBLISHED_IN"), ["p3"]),
        (("p3", "venue"), ["Venue:p1"]),
        (("smith, j", "wrote"), ["p3"]),
        (("p3", "WROTE"), ["bob", "smith, j"]),
    ],
)
def test_neighbor_check(api: GraphCoT, args: tuple[str, str], expected_ids: list[str]) -> None:
    call = api.call("NeighborCheck", args)
    assert call.error is None, call.error
    assert call.observation == f"The {args[1]} neighbors of {args[0]} are: {expected_ids}."
    assert list(call.node_ids) == expected_ids
    assert not call.truncated


def test_neighbour_spelling_and_subject(api: GraphCoT) -> None:
    call = api.call("NeighbourCheck", ("Author:bob", "WROTE"))
    assert call.function == "NeighborCheck"
    assert call.observation == "The WROTE neighbors of Author:bob are: ['p2', 'p3']."
    assert call.subject == "bob"
    assert api.neighbour_check("bob", "WROTE").node_ids == ("p2", "p3")


def test_no_neighbours_is_an_empty_list(api: GraphCoT) -> None:
    call = api.neighbor_check("Paper:Venue:odd", "<-CITES")
    assert call.observation == "The <-CITES neighbors of Paper:Venue:odd are: []."
    assert call.error is None and call.node_ids == ()


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("ann", "FRIEND"), ErrorCode.UNKNOWN_NEIGHBOR_TYPE),
        (("ann", "PUBLISHED_IN"), ErrorCode.UNKNOWN_NEIGHBOR_TYPE),  # not reachable from Author
        (("ann", "<-WROTE"), ErrorCode.UNKNOWN_NEIGHBOR_TYPE),  # Author has no incoming WROTE
        (("ann", "<-author"), ErrorCode.UNKNOWN_NEIGHBOR_TYPE),  # arrows only with a type
        (("ann", "venue"), ErrorCode.UNKNOWN_NEIGHBOR_TYPE),  # no Author-Venue triple
        (("ann", "WROTE; DROP"), ErrorCode.UNKNOWN_NEIGHBOR_TYPE),
        (("nobody", "WROTE"), ErrorCode.UNKNOWN_NODE),
    ],
)
def test_neighbor_errors(api: GraphCoT, args: tuple[str, str], code: ErrorCode) -> None:
    for function in ("NeighborCheck", "NodeDegree"):
        call = api.call(function, args)
        assert call.observation == NEIGHBOR_MISSING
        assert call.error is not None and call.error.code is code
        assert call.node_ids == () and call.subject is None


def test_row_limit_truncates_the_list(backend: LadybugBackend) -> None:
    small = GraphCoT(backend, row_limit=1)
    call = small.neighbor_check("p2", "author")
    assert call.node_ids == ("ann",) and call.truncated
    assert call.observation == "The author neighbors of p2 are: ['ann']. Only the first 1 neighbors are shown."
    multi = small.neighbor_check("p2", "-CITES-")  # two triples, each within the limit
    assert multi.node_ids == ("Paper:p1",) and multi.truncated
    assert small.node_degree("p2", "-CITES-").observation.endswith("are: 2.")  # degree is not cut


# -- NodeDegree -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "degree"),
    [
        (("Paper:p1", "<-CITES"), 2),
        (("Paper:p1", "CITES"), 0),
        (("p2", "-CITES-"), 2),
        (("p2", "paper"), 2),  # union of CITES out and in
        (("kdd", "paper"), 3),
        (("p3", "author"), 2),
        (("ann", "WROTE"), 2),
    ],
)
def test_node_degree(api: GraphCoT, args: tuple[str, str], degree: int) -> None:
    call = api.call("NodeDegree", args)
    assert call.observation == f"The {args[1]} neighbor node degree of {args[0]} are: {degree}."
    assert call.error is None and call.node_ids == ()


# -- RetrieveNode -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Ann Lee", "ann"),
        ("John Smith", "smith, j"),
        ("graph neural networks", "Paper:p1"),
        ("Attention is all you need", "p2"),
        ("KDD", "kdd"),
        ("Proceedings One", "Venue:p1"),
    ],
)
def test_retrieve_node(api: GraphCoT, text: str, expected: str) -> None:
    call = api.retrieve_node(text)
    assert call.observation == f"The ID of this retrieval target node is {expected}."
    assert call.node_ids == (expected,) and call.error is None


def test_retrieve_top_k(backend: LadybugBackend, index: NodeIndex) -> None:
    api3 = GraphCoT(backend, index=index, top_k=3)
    call = api3.retrieve_node("Knowledge Graph Embeddings")
    assert len(call.node_ids) == 3 and call.node_ids[0] == "p3"
    assert call.observation == f"The IDs of the retrieval target nodes are: {list(call.node_ids)}."


def test_retrieve_without_index_or_text(backend: LadybugBackend, api: GraphCoT) -> None:
    no_index = GraphCoT(backend).retrieve_node("Ann")
    assert no_index.error is not None and no_index.error.code is ErrorCode.NO_INDEX
    assert no_index.observation == (
        "There is no information that can be matched in the database. Please try another query."
    )
    blank = api.call("RetrieveNode", ("  ",))
    assert blank.error is not None and blank.error.code is ErrorCode.BAD_ARGUMENTS


# -- dispatch ---------------------------------------------------------------------------------


def test_unknown_function_and_bad_arguments(api: GraphCoT) -> None:
    unknown = api.call("Finish", ("x",))
    assert unknown.error is not None and unknown.error.code is ErrorCode.UNKNOWN_FUNCTION
    assert unknown.observation.startswith("Invalid Action. Valid Actions are RetrieveNode[keyword]")
    bad = api.call("NodeDegree", ("ann",))
    assert bad.error is not None and bad.error.code is ErrorCode.BAD_ARGUMENTS
    assert bad.observation == (
        "There is something wrong with the arguments for degree checking. Expect: NodeDegree[node_id, neighbor_type]."
    )


def test_parsed_calls_run(api: GraphCoT) -> None:
    parsed = parse_call("NodeFeature[smith, j, name]")
    assert not isinstance(parsed, str)
    assert api.call(*parsed).observation == "The name feature of smith, j are: John Smith."
    parsed = parse_call("NeighbourCheck['Paper:p1', \"<-CITES\"]")
    assert not isinstance(parsed, str)
    assert api.call(*parsed).node_ids == ("p2", "p3")


def test_record_is_serialisable(api: GraphCoT) -> None:
    record = api.neighbor_check("p2", "author").to_dict()
    assert record["function"] == "NeighborCheck" and record["node_ids"] == ["ann", "bob"]
    assert record["error"] is None and record["subject"] == "p2"
    assert api.node_feature("zed", "name").to_dict()["error"]["code"] == "unknown_node"


def test_resolve_neighbor_type_registry(backend: LadybugBackend) -> None:
    schema = backend.schema()
    assert resolve_neighbor_type(schema, "Paper", "cites") == (Hop("CITES", "out", "Paper"),)
    assert resolve_neighbor_type(schema, "Paper", "-CITES-") == (
        Hop("CITES", "out", "Paper"),
        Hop("CITES", "in", "Paper"),
    )
    assert resolve_neighbor_type(schema, "Venue", "papers") == (Hop("PUBLISHED_IN", "in", "Paper"),)
    assert resolve_neighbor_type(schema, "Paper", "->CITES<-") == ()
    assert resolve_neighbor_type(schema, "Paper", "") == ()
