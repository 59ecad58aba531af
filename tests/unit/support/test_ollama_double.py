"""The Ollama test double speaks Ollama's HTTP API as the ollama client and httpx see it."""

import json

import httpx
import pytest
from ollama import Client, ResponseError
from support.ollama_double import INSUFFICIENT, OllamaDouble, grounded_reply

pytestmark = [pytest.mark.integration, pytest.mark.ollama]


class TestOllamaDouble:
    def test_tags_version_root(self):
        with OllamaDouble(models=["llama3.2:latest"]) as double:
            assert [m["name"] for m in httpx.get(f"{double.url}/api/tags").json()["models"]] == ["llama3.2:latest"]
            assert httpx.get(f"{double.url}/api/version").json()["version"]
            assert httpx.get(double.url).text == "Ollama is running"

    def test_chat_and_generate_with_the_ollama_client(self):
        with OllamaDouble(reply="Hello there.") as double:
            client = Client(host=double.url)
            assert (
                client.chat(model="llama3.2", messages=[{"role": "user", "content": "hi"}]).message.content
                == "Hello there."
            )
            streamed = "".join(
                part.message.content
                for part in client.chat(model="llama3.2", messages=[{"role": "user", "content": "hi"}], stream=True)
            )
            assert streamed == "Hello there."
            assert client.generate(model="llama3.2", prompt="hi").response == "Hello there."
            assert (
                "".join(part.response for part in client.generate(model="llama3.2", prompt="hi", stream=True))
                == "Hello there."
            )
            assert [r["path"] for r in double.requests] == ["/api/chat", "/api/chat", "/api/generate", "/api/generate"]

    def test_unknown_model_is_404_like_ollama(self):
        with OllamaDouble(models=["llama3.2"]) as double:
            with pytest.raises(ResponseError) as error:
                Client(host=double.url).chat(model="qwen3:8b", messages=[{"role": "user", "content": "hi"}])
            assert error.value.status_code == 404 and "try pulling it first" in error.value.error

    def test_scripted_prompts_and_outage(self):
        with OllamaDouble(rating="77", category="PROCEDURAL") as double:

            def chat(text):
                body = {"model": "llama3.2", "stream": False, "messages": [{"role": "user", "content": text}]}
                return httpx.post(f"{double.url}/api/chat", content=json.dumps(body)).json()["message"]["content"]

            assert chat("... Rate the support level from 0-100 ...") == "77"
            assert chat("Classify this query for retrieval optimization.") == "PROCEDURAL"
            double.go_down()
            with pytest.raises(httpx.ConnectError):
                httpx.get(f"{double.url}/api/tags")

    def test_grounded_reply(self):
        system = (
            "rules\n[SourceId: hr-1:2]\n[Document: HR]\n[Page: N/A] [Section: N/A]\n---\nFirst fact here. Second.\n---"
        )
        assert (
            grounded_reply({"messages": [{"role": "system", "content": system}]})
            == "First fact here. [SourceId: hr-1:2]"
        )
        assert grounded_reply({"messages": [{"role": "system", "content": "no context"}]}) == INSUFFICIENT
