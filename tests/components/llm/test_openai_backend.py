"""The OpenAI-compatible backend against a real local server: a stdlib ``http.server`` on
127.0.0.1 whose ``/v1/chat/completions`` runs the real transformers backend on a tiny random model
(answering like vLLM: stop strings cut, ``stop_reason`` names the one that matched)."""

from __future__ import annotations

import dataclasses
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import torch

from components.llm import LLMError, SamplingParams, make_backend, tiny_random_model
from components.llm.openai_backend import OpenAIBackend
from components.llm.transformers_backend import TransformersBackend

CONVS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Name a graph."}],
]


def _handler(backend: TransformersBackend, lock: threading.Lock, seen: list[dict]) -> type:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # keep test output quiet
            pass

        def _send(self, code: int, payload: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
            if self.path.startswith("/broken/"):
                return self._send(200, b'{"choices": [{"message": ')
            if self.path.startswith("/fail/"):
                return self._send(500, b'{"error": "model exploded"}')
            if self.path != "/v1/chat/completions":
                return self._send(404, b'{"error": "not found"}')
            params = SamplingParams(
                max_new_tokens=body["max_tokens"],
                temperature=body["temperature"],
                top_p=body["top_p"],
                top_k=body.get("top_k", 0),
                stop=tuple(body.get("stop") or ()),
                seed=body.get("seed"),
                n=body["n"],
            )
            with lock:  # one model, one generate at a time
                [gens] = backend.generate([body["messages"]], params)
            choices = [
                {
                    "index": k,
                    "message": {"role": "assistant", "content": g.text},
                    "finish_reason": "length" if g.stop_reason == "length" else "stop",
                    "stop_reason": g.stop_reason if g.stop_reason in params.stop else None,
                }
                for k, g in enumerate(gens)
            ]
            completion = sum(g.completion_tokens for g in gens)
            usage = {
                "prompt_tokens": gens[0].prompt_tokens,
                "completion_tokens": completion,
                "total_tokens": gens[0].prompt_tokens + completion,
            }
            self._send(
                200,
                json.dumps(
                    {"object": "chat.completion", "model": body["model"], "choices": choices, "usage": usage}
                ).encode(),
            )

    return Handler


@pytest.fixture(scope="module")
def local_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TransformersBackend]:
    before = torch.get_num_threads()
    path = tiny_random_model(tmp_path_factory.mktemp("tiny") / "m", seed=7)
    backend = TransformersBackend(path, threads=1)
    yield backend
    backend.close()
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def server(local_model: TransformersBackend) -> Iterator[tuple[str, list[dict]]]:
    seen: list[dict] = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(local_model, threading.Lock(), seen))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


def test_matches_the_in_process_backend(server: tuple[str, list[dict]], local_model: TransformersBackend) -> None:
    url, seen = server
    client = make_backend("openai", base_url=url + "/v1/", model="tiny", api_key="k")
    assert isinstance(client, OpenAIBackend)
    params = SamplingParams(max_new_tokens=10, temperature=0.9, top_k=40, n=2, seed=5)
    remote = client.generate(CONVS, params)
    local = local_model.generate(CONVS, params)  # same seeds: conversation i uses seed + i
    assert [[g.text for g in gens] for gens in remote] == [[g.text for g in gens] for gens in local]
    for r_gens, l_gens in zip(remote, local):
        assert all(r.prompt_tokens == l.prompt_tokens for r, l in zip(r_gens, l_gens))
        # usage.completion_tokens is the total over choices; the client splits it evenly
        assert sum(r.completion_tokens for r in r_gens) == sum(l.completion_tokens for l in l_gens)
        assert all(r.latency_s > 0 for r in r_gens)
    bodies = sorted((s["body"] for s in seen[-2:]), key=lambda b: b["seed"])
    assert [b["seed"] for b in bodies] == [5, 6]
    assert bodies[0]["top_k"] == 40 and bodies[0]["n"] == 2 and bodies[0]["max_tokens"] == 10
    assert "stop" not in bodies[0] and seen[-1]["auth"] == "Bearer k"


def test_stop_strings_and_reasons(server: tuple[str, list[dict]], local_model: TransformersBackend) -> None:
    url, _ = server
    client = OpenAIBackend(url, "tiny")
    sampled = SamplingParams(max_new_tokens=12, temperature=1.0, seed=3)
    [[full]] = local_model.generate(CONVS[:1], sampled)
    [[plain]] = client.generate(CONVS[:1], sampled)
    assert plain.text == full.text and plain.stop_reason == full.stop_reason == "length"
    stop = local_model.tokenizer.decode(full.token_ids[6:8]).strip()  # text the model does produce
    assert stop and stop in full.text
    [[cut]] = client.generate(CONVS[:1], dataclasses.replace(sampled, stop=("never-said", stop)))
    assert cut.stop_reason == stop and cut.text == full.text[: full.text.index(stop)]
    assert cut.completion_tokens < full.completion_tokens


def test_an_assistant_prefix_asks_the_server_to_continue(
    server: tuple[str, list[dict]], local_model: TransformersBackend
) -> None:
    """A conversation ending with an assistant message is sent with vLLM's chat-completions
    extension (continue the final message, no new generation prompt); this server continues it
    as the in-process backend does."""
    url, seen = server
    conv = [*CONVS[0], {"role": "assistant", "content": "It is"}]
    params = SamplingParams(max_new_tokens=8, temperature=0, seed=1)
    [[remote]] = OpenAIBackend(url, "tiny").generate([conv], params)
    [[local]] = local_model.generate([conv], params)
    assert remote.text == local.text
    body = seen[-1]["body"]
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
    OpenAIBackend(url, "tiny").generate([CONVS[0]], params)
    assert "continue_final_message" not in seen[-1]["body"]


def test_http_error_names_the_url(server: tuple[str, list[dict]]) -> None:
    url, _ = server
    with pytest.raises(LLMError, match=r"/fail/v1/chat/completions answered HTTP 500: .*model exploded"):
        OpenAIBackend(url + "/fail", "tiny").generate(CONVS[:1], SamplingParams(max_new_tokens=2))


def test_malformed_json_names_the_url(server: tuple[str, list[dict]]) -> None:
    url, _ = server
    with pytest.raises(LLMError, match=r"/broken/v1/chat/completions returned malformed JSON"):
        OpenAIBackend(url + "/broken", "tiny").generate(CONVS[:1], SamplingParams(max_new_tokens=2))


def test_unreachable_server_names_the_url() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with pytest.raises(LLMError, match=rf"cannot reach {url}/v1/chat/completions"):
        OpenAIBackend(url, "tiny", timeout_s=5).generate(CONVS[:1], SamplingParams(max_new_tokens=2))


def test_bad_base_url() -> None:
    with pytest.raises(LLMError, match="http"):
        OpenAIBackend("localhost:8000", "tiny")
