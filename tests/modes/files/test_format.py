"""The `<key>.mode.md` format: whatever a catalog entry holds comes back exactly from its file (the prompt
byte for byte), the same entry always gives the same bytes, and YAML is only ever read safely."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modes.files.format import FIELDS, PROMPT, TEAMS, defaults, read, render
from modes.files.frontmatter import join, split

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80)
LINES = st.lists(TEXT, max_size=4)
NONEMPTY = TEXT.filter(lambda t: t.strip())
EXPECT = st.fixed_dictionaries(
    {},
    optional={
        "tool": NONEMPTY,
        "contains": NONEMPTY,
        "not_contains": NONEMPTY,
        "status": st.sampled_from(["completed", "failed"]),
    },
).filter(bool)
CHECKS = st.lists(
    st.builds(
        lambda prompt, execution, expect: {"prompt": prompt, "execution": execution, "expect": expect},
        NONEMPTY,
        st.sampled_from(["ask", "agent"]),
        EXPECT,
    ),
    max_size=3,
)


def values(**changes):
    return {**defaults(), "key": "ddr", "display_name": "DDR", "description": "Design decisions", **changes}


def reread(text: str) -> dict:
    mode_file, problems = read("ddr.mode.md", text)
    assert problems == [], problems
    assert mode_file is not None
    return {**defaults(), **mode_file.values}


@pytest.mark.parametrize(
    "prompt",
    [
        "",
        "\n",
        "\n\n",
        "one line",
        "ends with a newline\n",
        "ends with two\n\n",
        "\nstarts with a newline",
        "  indented first line\n\tand a tab",
        "windows\r\nline endings\r\n",
        "\r",
        "\r\n",
        "---\nlooks like front matter\n---\n",
        "trailing spaces   \n",
    ],
)
def test_the_prompt_comes_back_byte_for_byte(prompt):
    assert reread(render(values(system_prompt=prompt)))[PROMPT] == prompt


@settings(max_examples=150, deadline=None)
@given(
    description=TEXT.filter(lambda t: t.strip()),
    summary=TEXT,
    prompt=TEXT,
    order=st.integers(min_value=0, max_value=10**6),
    active=st.booleans(),
    ask_followup=st.sampled_from([None, True, False]),
    execution=st.sampled_from(["", "ask", "agent"]),
    roles=LINES,
    examples=LINES,
    tests=LINES,
    checks=CHECKS,
    knowledge=st.one_of(st.sampled_from(["project", "none"]), st.lists(NONEMPTY, min_size=1, max_size=3)),
    teams=st.lists(st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True), max_size=3, unique=True),
)
def test_any_entry_round_trips_through_its_file(
    description,
    summary,
    prompt,
    order,
    active,
    ask_followup,
    execution,
    roles,
    examples,
    tests,
    checks,
    knowledge,
    teams,
):
    entry = values(
        description=description,
        system_prompt_summary=summary,
        system_prompt=prompt,
        ordering=order,
        is_active=active,
        ask_followup=ask_followup,
        execution=execution,
        human_role_hints=roles,
        example_utterances=examples,
        test_utterances=tests,
        checks=checks,
        knowledge_scope=knowledge,
        teams=sorted(teams),
    )
    text = render(entry)
    assert reread(text) == entry
    assert render(reread(text)) == text  # deterministic: the same entry, the same bytes


def test_keys_are_written_in_the_tables_order_and_defaults_of_optional_keys_are_left_out():
    text = render(values())
    keys = [line.split(":")[0] for line in split("ddr.mode.md", text)[0].splitlines() if not line.startswith(" ")]
    written = ["key", "name", "description", "summary", "default", "active", "order", "tools", "approvals"]
    assert keys == [*written, "roles", "examples"]
    optional = {f.key for f in FIELDS if f.omit_default}
    assert optional == {"execution", "model", "tests", "checks", "knowledge", "ask_followup", "teams"}
    full = render(values(execution="agent", model="gpt-4o", ask_followup=False, teams=["b", "a"]))
    assert "execution: agent\nmodel: gpt-4o\n" in full and "ask_followup: false\nteams:\n  - a\n  - b\n" in full


def test_long_and_multi_line_text_stays_readable_in_a_diff():
    long = "word " * 60 + "end"
    text = render(values(description=long, system_prompt_summary="first line\nsecond line", tool_policy=["*"]))
    assert f"description: {long}\n" in text  # one line, never folded
    assert "summary: |-\n  first line\n  second line\n" in text
    assert "tools:\n  - '*'\n" in text


def test_yaml_is_read_with_the_safe_loader_only():
    text = "---\nkey: ddr\nname: !!python/object/apply:os.system ['true']\n---\n"
    mode_file, problems = read("ddr.mode.md", text)
    assert mode_file is None
    assert [str(p) for p in problems] == [
        "ddr.mode.md:3: YAML syntax error: could not determine a constructor for the tag "
        "'tag:yaml.org,2002:python/object/apply:os.system'"
    ]


def test_a_file_saved_with_windows_line_endings_reads_the_same():
    text = render(values(system_prompt="First line.\nSecond line.", tool_policy=["image_gen"]))
    windows = reread(text.replace("\n", "\r\n"))
    assert windows["tool_policy"] == ["image_gen"]
    assert windows[PROMPT] == "First line.\r\nSecond line."  # the prompt keeps the bytes it was given


def test_join_writes_a_blank_line_between_front_matter_and_body():
    assert join({"key": "x"}, "Body") == "---\nkey: x\n---\n\nBody\n"
    assert join({"key": "x"}, "") == "---\nkey: x\n---\n"
    assert TEAMS == "teams"


def test_checks_are_written_in_block_style_with_their_keys_in_a_fixed_order():
    check = {"expect": {"status": "completed", "contains": "DDR", "tool": "document_write"}, "prompt": "Draft a DDR"}
    text = render(values(test_utterances=["Start a DDR"], checks=[check], example_utterances=["Write a DDR"]))
    assert (
        "examples:\n  - Write a DDR\ntests:\n  - Start a DDR\nchecks:\n  - prompt: Draft a DDR\n    execution: ask\n"
        "    expect:\n      tool: document_write\n      contains: DDR\n      status: completed\n"
    ) in text
    assert reread(text)["checks"] == [
        {
            "prompt": "Draft a DDR",
            "execution": "ask",
            "expect": {"tool": "document_write", "contains": "DDR", "status": "completed"},
        }
    ]
