"""Tiny Hugging Face models with random weights, made here (no weights can be downloaded): a
byte-level BPE tokenizer trained with the `tokenizers` library on qrelkit's own prompt texts,
with a chat template; a LLaVA (CLIP vision tower + Llama) and a Llama text model from their
configs. Each is saved with `save_pretrained`, so judges load it through the real
`from_pretrained` path, and in the hub's layout (the keys of llava-hf's checkpoints), so vLLM's
own loader reads it too. Also used by benchmarks/bench_transformers.py and bench_vllm.py with
larger sizes. vLLM's CPU attention takes head sizes of 32 and more: pass widths of 64 per 2 heads."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPECIAL_TOKENS = ["<pad>", "<s>", "</s>", "<image>", "<|system|>", "<|user|>", "<|assistant|>"]
# Roles in the open, contents as strings or typed parts, an image placeholder per image part.
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<|{{ message['role'] }}|>\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}{% if part['type'] == 'image' %}<image>\n"
    "{% else %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}</s>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def corpus() -> list[str]:
    """Texts like the prompts the judges will see: the built-in templates and the demo collection."""
    texts = [path.read_text() for path in sorted((ROOT / "qrelkit" / "prompts" / "builtin").glob("*.yaml"))]
    demo = ROOT / "qrelkit" / "data" / "demo"
    texts += [(demo / "passages.jsonl").read_text(), (demo / "topics.tsv").read_text()]
    return texts + ["Relevance: 0", "Relevance: 1", "Relevance: 2", "Relevance: 3"] * 20


def make_tokenizer(vocab_size: int = 600):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tokenizer.train_from_iterator(corpus(), trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", pad_token="<pad>")
    fast.chat_template = CHAT_TEMPLATE
    return fast


def tiny_llava(
    folder: Path,
    *,
    seed: int = 0,
    image_size: int = 32,
    patch_size: int = 8,
    vision_width: int = 32,
    vision_layers: int = 2,
    text_width: int = 32,
    text_layers: int = 2,
    heads: int = 2,
    vocab_size: int = 600,
) -> Path:
    """A LLaVA-1.5-shaped model (CLIP ViT tower, "default" feature selection dropping CLS, MLP
    projector, Llama) with its processor, saved in ``folder``."""
    import torch
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig, LlavaForConditionalGeneration

    tokenizer = make_tokenizer(vocab_size)
    vision = CLIPVisionConfig(
        hidden_size=vision_width,
        intermediate_size=4 * vision_width,
        num_hidden_layers=vision_layers,
        num_attention_heads=heads,
        image_size=image_size,
        patch_size=patch_size,
        projection_dim=vision_width,
    )
    config = LlavaConfig(
        vision_config=vision,
        text_config=_llama_config(LlamaConfig, tokenizer, text_width, text_layers, heads),
        image_token_id=tokenizer.convert_tokens_to_ids("<image>"),
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )
    torch.manual_seed(seed)
    LlavaForConditionalGeneration(config).save_pretrained(folder)
    hub_layout(folder)
    llava_processor(tokenizer, image_size, patch_size).save_pretrained(folder)
    return folder


def hub_layout(folder: Path) -> None:
    """Rename the vision tower's weights to the hub's layout (`vision_tower.vision_model.*`, as in
    llava-hf/llava-1.5-7b-hf), which transformers 5 reads but does not write, and vLLM needs."""
    from safetensors.torch import load_file, save_file

    for path in sorted(folder.glob("*.safetensors")):
        tensors = load_file(path)
        prefix, hub = "vision_tower.", "vision_tower.vision_model."
        renamed = {hub + key[len(prefix) :] if key.startswith(prefix) and not key.startswith(hub) else key: t for key, t in tensors.items()}
        if renamed.keys() != tensors.keys():
            save_file(renamed, path, metadata={"format": "pt"})


def llava_processor(tokenizer=None, image_size: int = 32, patch_size: int = 8):
    """LLaVA-1.5's processor shape: CLIP image preprocessing, one <image> expanded to a token per patch."""
    from transformers import CLIPImageProcessor, LlavaProcessor

    images = CLIPImageProcessor(size={"shortest_edge": image_size}, crop_size={"height": image_size, "width": image_size})
    return LlavaProcessor(
        image_processor=images,
        tokenizer=tokenizer or make_tokenizer(),
        patch_size=patch_size,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,  # CLIP's CLS token, which "default" drops
        chat_template=CHAT_TEMPLATE,
    )


def tiny_llama(folder: Path, *, seed: int = 0, width: int = 32, layers: int = 2, heads: int = 2, vocab_size: int = 600) -> Path:
    """A Llama text model and its tokenizer (with the chat template), saved in ``folder``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = make_tokenizer(vocab_size)
    torch.manual_seed(seed)
    LlamaForCausalLM(_llama_config(LlamaConfig, tokenizer, width, layers, heads)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _llama_config(LlamaConfig, tokenizer, width: int, layers: int, heads: int):
    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=width,
        intermediate_size=4 * width,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=4096,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
