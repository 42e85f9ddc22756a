"""Prompt templates: validation errors name file and field; rendering; output parsing."""

from __future__ import annotations

import pytest
import yaml

from qrelkit.io import Document, Topic
from qrelkit.prompts import TemplateError, builtin_templates, load_template, parse_score

BASE = {
    "id": "t",
    "relevance_instruction": "Judge the passage for the query.",
    "context": "Query: {query}",
    "output_instruction": "Answer 'Relevance: N' with N from {min_score} to {max_score}.",
    "score_range": [0, 3],
}


def template_file(tmp_path, **changes):
    data = {**BASE, **changes}
    data = {k: v for k, v in data.items() if v is not None}
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"context": "Query: {querry}"}, "(template)", "context: unknown placeholder {querry}"),
        ({"context": "Title: {section_title}"}, "(template)", "list extra topic fields under `topic_fields`"),
        ({"document": "Passage: {text}"}, "(template)", "document: unknown placeholder {text}"),
        ({"context": "Query: {query.upper}"}, "context", "must be a plain name"),
        ({"parser": {"pattern": r"Relevance: (\d+)"}}, "parser.pattern", "needs a named group `(?P<score>...)`"),
        ({"parser": {"pattern": "Relevance: (?P<score>"}}, "parser.pattern", "not a valid regular expression"),
        ({"relevance_instruction": "  "}, "relevance_instruction", "must not be empty"),
        ({"output_instruction": None}, "output_instruction", "Field required"),
        ({"score_range": [3, 0]}, "(template)", "score_range: low 3.0 must be below high 0.0"),
        ({"temperature": 0}, "temperature", "unknown key; (keys here: id, version, description, modality, system,"),
        ({"parser": {"patern": "x"}}, "parser.patern", "unknown key; did you mean 'pattern'? (keys here: pattern)"),
    ],
)
def test_invalid_templates_name_the_file_and_field(tmp_path, changes, field, message):
    path = template_file(tmp_path, **changes)
    with pytest.raises(TemplateError) as info:
        load_template(path)
    assert f"{path}: {field}: " in str(info.value)
    assert message in str(info.value)


def test_placeholders_the_topics_lack_are_named_with_the_topic(tmp_path):
    template = load_template(template_file(tmp_path, context="{section_title}", topic_fields=["section_title"]))
    topics = [Topic("a", "x", {"section_title": "History"}), Topic("b", "y", {"page_title": "Paris"})]
    with pytest.raises(TemplateError, match="uses {section_title} but topic 'b' has no field 'section_title'"):
        template.check_topics(topics, source="job.yaml")


def test_unknown_template_lists_the_builtins():
    with pytest.raises(TemplateError, match="built-ins: atomic-image-suggestion, binary, trec-dl-graded, umbrela"):
        load_template("no-such-template")


def test_builtins_load_and_table1_template_is_seed_003s():
    templates = {t.id: t for t in builtin_templates()}
    atomic = templates["atomic-image-suggestion"]
    assert atomic.modality == "image" and atomic.score_range == (1, 100)
    assert "Think carefully about which images best illustrate the SECTION subject matter" in atomic.relevance_instruction
    assert templates["trec-dl-graded"].grade_token_list == ["0", "1", "2", "3"]


def test_a_changed_template_has_a_new_identity(tmp_path):
    one = load_template(template_file(tmp_path))
    two = load_template(template_file(tmp_path, output_instruction="Reply 'Relevance: N' (N in {min_score}-{max_score})."))
    assert one.content_hash != two.content_hash
    assert one.content_hash == load_template(template_file(tmp_path)).content_hash


def test_rendering_follows_table_1_layout():
    template = load_template("atomic-image-suggestion")
    topic = Topic("q1", "ignored", {"page_title": "Goldfish", "section_title": "Growth", "section_context": "They grow."})
    rendered = template.render(topic, Document("img1", image="a.jpg", image_root="/imgs"))
    text = str(rendered)
    assert text.index("Think carefully") < text.index("Text Input:\nGoldfish. Growth. They grow.") < text.index("[image: /imgs/a.jpg]")
    assert text.rstrip().endswith('Output format should be: "Relevance: <score>"')
    assert "scale: 1-100" in text
    assert template.render_context(topic) == "Text Input:\nGoldfish. Growth. They grow."


def test_a_text_template_refuses_an_image_document():
    template = load_template("trec-dl-graded")
    with pytest.raises(TemplateError, match="is for text, but document 'i' is an image"):
        template.render(Topic("q", "x"), Document("i", image="a.png", image_root="."))


# -- parsing: what models really write ------------------------------------------------------

GRADED = load_template("trec-dl-graded")  # 0-3
PERCENT = load_template("atomic-image-suggestion")  # 1-100


@pytest.mark.parametrize(
    ("template", "output", "score"),
    [
        (GRADED, "Relevance: 2", 2.0),
        (GRADED, "relevance:3", 3.0),
        (GRADED, "**Relevance:** 1", 1.0),
        (GRADED, "Relevance: `0`\n\nThe passage is about cats, not the query.", 0.0),
        (GRADED, "The passage mentions goldfish size.\nRelevance = 2", 2.0),
        (GRADED, 'Output format: "Relevance: <grade>"\nRelevance: 3', 3.0),
        (GRADED, "## Relevance\n2", 2.0),
        (PERCENT, "Relevance: 85/100", 85.0),
        (PERCENT, "Relevance: 85. The image shows the tower at night.", 85.0),
        (PERCENT, "I would rate it as follows. Relevance: 72.5", 72.5),
    ],
)
def test_parser_reads_real_looking_outputs(template, output, score):
    parsed = parse_score(output, template)
    assert parsed.ok and parsed.score == score


@pytest.mark.parametrize(
    ("template", "output", "error"),
    [
        (GRADED, "Relevance: 4", "outside the range 0-3"),
        (GRADED, "Relevance: -1", "outside the range 0-3"),
        (PERCENT, "Relevance: 0", "outside the range 1-100"),
        (PERCENT, "Relevance: 8/10", "is not on the 1-100 scale"),
        (GRADED, "I think it is quite relevant.", "no match"),
        (GRADED, "", "empty output"),
        (GRADED, None, "empty output"),
    ],
)
def test_parser_refuses_what_it_cannot_trust(template, output, error):
    parsed = parse_score(output, template)
    assert not parsed.ok and parsed.score is None and error in parsed.error


# UMBRELA's published zero-shot prompt (castorini/umbrela, qrel_zeroshot_bing.yaml; Upadhyay et al.,
# arXiv 2406.06519, 2024), trailing spaces included, with its {query} and {passage} slots.
UMBRELA_PROMPT = (
    "Given a query and a passage, you must provide a score on an integer scale of 0 to 3 with the following meanings:\n"
    "0 = represent that the passage has nothing to do with the query, \n"
    "1 = represents that the passage seems related to the query but does not answer it, \n"
    "2 = represents that the passage has some answer for the query, but the answer may be a bit unclear, "
    "or hidden amongst extraneous information and \n"
    "3 = represents that the passage is dedicated to the query and contains the exact answer.\n\n"
    "Important Instruction: Assign category 1 if the passage is somewhat related to the topic but not completely, "
    "category 2 if passage presents something very important related to the entire topic but also has some extra information "
    "and category 3 if the passage only and entirely refers to the topic. If none of the above satisfies give it category 0.\n\n"
    "Query: {query}\n"
    "Passage: {passage}\n\n"
    "Split this problem into steps:\n"
    "Consider the underlying intent of the search.\n"
    "Measure how well the content matches a likely intent of the query (M).\n"
    "Measure how trustworthy the passage is (T).\n"
    "Consider the aspects above and the relative importance of each, and decide on a final score (O). "
    "Final score must be an integer value only.\n"
    "Do not provide any code in result. Provide each score in the format of: ##final score: score without providing any reasoning."
)


def test_the_umbrela_template_is_umbrelas_published_prompt():
    template = load_template("umbrela")
    assert template.score_range == (0, 3) and template.grade_token_list == ["0", "1", "2", "3"] and template.system is None
    assert "Upadhyay et al., arXiv 2406.06519, 2024" in template.description
    rendered = template.render(Topic("q1", "do goldfish grow"), Document("d1", "Goldfish grow with their pond."))
    published = UMBRELA_PROMPT.format(query="do goldfish grow", passage="Goldfish grow with their pond.")
    # The one difference of layout: qrelkit separates the query and the passage by a blank line.
    assert rendered.user_text == published.replace("\nPassage: ", "\n\nPassage: ")
    assert parse_score("M: 2\nT: 1\n##final score: 2", template).score == 2
    assert parse_score("##Final Score:3", template).score == 3
    assert parse_score("I would say 2.", template).score is None  # no fallback to 0, unlike UMBRELA's parser
