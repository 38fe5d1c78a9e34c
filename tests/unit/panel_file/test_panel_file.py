"""PANEL.yaml: loading, errors that name file/field/line and say the fix, no literal keys,
keys from the environment, relative prompt paths, simulated critics."""

from __future__ import annotations

import gc
import os
import textwrap
import threading
from pathlib import Path

import anyio
import pytest

from cross_judge import ConfigError, Ensemble
from cross_judge.panel_file import PanelError, load_panel, parse_panel
from cross_judge.testing import Persona

from ...waits import SAFETY_NET_S

SECRET = "sk-live-0123456789abcdefSECRET"
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

MINIMAL = """\
critics:
  - name: a
    model: deepseek-chat
"""


def write(tmp_path: Path, text: str, name: str = "panel.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def problem(tmp_path: Path, text: str) -> PanelError:
    path = write(tmp_path, text)
    with pytest.raises(PanelError) as info:
        load_panel(path)
    return info.value


# -- what a valid file gives --------------------------------------------------------------------


def test_minimal_panel_takes_the_documented_defaults() -> None:
    spec = parse_panel(MINIMAL)
    assert spec.voting == "majority"
    assert spec.voting_kwargs == {}
    assert spec.concurrency is None
    critic = spec.critics[0]
    assert (critic.vendor, critic.weight, critic.temperature, critic.max_tokens) == (
        "deepseek",
        1.0,
        0.0,
        2000,
    )


def test_full_panel_builds_an_ensemble_with_every_setting(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        voting: weighted
        voting_kwargs: {priority: [REJECT]}
        min_valid: 2
        deadline: 30
        concurrency: 4
        critics:
          - name: a
            model: m-a
            vendor: custom
            base_url: http://127.0.0.1:1/v1
            prompt: taxonomy-review@1
            weight: 2.5
            temperature: 0.3
            max_tokens: 300
            timeout: 5
            max_retries: 1
          - name: b
            model: m-b
            vendor: custom
            base_url: http://127.0.0.1:1/v1
            labels: [KEEP, REJECT]
        """,
    )
    spec = load_panel(path)
    ensemble = spec.build()
    assert isinstance(ensemble, Ensemble)
    assert spec.concurrency == 4
    assert (ensemble.voting, ensemble.min_valid, ensemble.deadline) == ("weighted", 2, 30)
    a, b = ensemble.critics
    assert (a.weight, a.temperature, a.max_tokens, a.timeout, a.max_retries) == (
        2.5,
        0.3,
        300,
        5,
        1,
    )
    assert a.prompt is not None and not isinstance(a.prompt, str)
    assert a.prompt.ref == "taxonomy-review@1"
    assert b.labels == ("KEEP", "REJECT")


# -- every error names file, field and line, and says the fix ----------------------------------


def test_unknown_top_level_field_suggests_the_known_one(tmp_path: Path) -> None:
    error = problem(tmp_path, "votng: majority\n" + MINIMAL)
    message = str(error)
    assert f"{tmp_path / 'panel.yaml'}:1: votng: is not a known field" in message
    assert "did you mean 'voting'?" in message


def test_unknown_critic_field_names_its_path_and_line(tmp_path: Path) -> None:
    error = problem(tmp_path, MINIMAL + "    temprature: 0.2\n")
    assert error.problems[0].field == "critics[0].temprature"
    assert error.problems[0].line == 4
    assert "did you mean 'temperature'?" in str(error)


def test_wrong_type_names_the_expected_type(tmp_path: Path) -> None:
    error = problem(tmp_path, MINIMAL + "    weight: heavy\n")
    assert ":4: critics[0].weight: expected a number, got text" in str(error)


def test_number_where_text_is_due_says_to_quote_it(tmp_path: Path) -> None:
    error = problem(tmp_path, "critics:\n  - name: a\n    model: 4\n")
    assert ":3: critics[0].model: expected text, got a number; put it in quotes" in str(error)


def test_out_of_range_number_is_reported_with_its_bound(tmp_path: Path) -> None:
    error = problem(tmp_path, MINIMAL + "    temperature: 3\n")
    assert ":4: critics[0].temperature: should be less than or equal to 2" in str(error)


def test_unknown_vendor_lists_known_ones_and_suggests_one(tmp_path: Path) -> None:
    error = problem(tmp_path, MINIMAL + "    vendor: deepsek\n")
    message = str(error)
    assert ":4: critics[0].vendor: unknown vendor 'deepsek' (did you mean 'deepseek'?)" in message
    assert "known: anthropic, custom, deepseek" in message and "simulated" in message


def test_a_key_pasted_as_the_vendor_is_masked_in_every_problem_message(tmp_path: Path) -> None:
    error = problem(tmp_path, MINIMAL + f"    vendor: {SECRET}\n")
    assert SECRET not in str(error)
    assert all(SECRET not in p.message for p in error.problems)
    assert "unknown vendor" in error.problems[0].message


def test_unknown_packaged_prompt_lists_packaged_ones(tmp_path: Path) -> None:
    error = problem(tmp_path, MINIMAL + "    prompt: taxonomy-reviw@1\n")
    message = str(error)
    assert ":4: critics[0].prompt: no packaged prompt 'taxonomy-reviw'" in message
    assert "did you mean 'taxonomy-review@1'?" in message


def test_duplicate_critic_names_point_at_the_second(tmp_path: Path) -> None:
    error = problem(
        tmp_path,
        """\
        critics:
          - name: a
            model: m
          - name: a
            model: n
        """,
    )
    assert error.problems[0].field == "critics[1].name"
    assert error.problems[0].line == 4
    assert "also used by critics[0]" in str(error)


def test_missing_model_is_required_with_an_example(tmp_path: Path) -> None:
    error = problem(tmp_path, "critics:\n  - name: a\n")
    assert ":2: critics[0].model: is required: the vendor's model id" in str(error)


def test_empty_critics_list_is_refused(tmp_path: Path) -> None:
    error = problem(tmp_path, "critics: []\n")
    assert ":1: critics: is empty; list at least one critic" in str(error)


def test_every_problem_of_a_file_is_reported_in_line_order(tmp_path: Path) -> None:
    error = problem(tmp_path, "votng: x\n" + MINIMAL + "    weight: heavy\n    vendor: nope\n")
    assert [p.line for p in error.problems] == [1, 5, 6]


def test_invalid_yaml_gives_its_line(tmp_path: Path) -> None:
    error = problem(tmp_path, "critics:\n  - name: a\n    model: [unclosed\n")
    assert "invalid YAML" in str(error) and error.problems[0].line is not None


def test_a_field_given_twice_is_refused(tmp_path: Path) -> None:
    error = problem(tmp_path, MINIMAL + "    model: other\n")
    assert ":4: critics[0].model: is given twice (also on line 3); keep one" in str(error)


def test_missing_panel_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such panel file"):
        load_panel(tmp_path / "nope.yaml")


def test_a_panel_file_over_the_size_cap_is_refused_naming_its_size(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "#" * (2 * 1024 * 1024) + "\n")  # the cap: 2 MiB
    size = path.stat().st_size
    with pytest.raises(PanelError, match=rf"the panel file is {size:,} bytes, over the 2,097,152"):
        load_panel(path)


def test_unknown_voting_strategy_is_reported_at_voting(tmp_path: Path) -> None:
    error = problem(tmp_path, "voting: majorty\n" + MINIMAL)
    assert error.problems[0].field == "voting" and error.problems[0].line == 1


def test_bad_voting_kwargs_are_reported_at_voting_kwargs(tmp_path: Path) -> None:
    error = problem(tmp_path, "voting_kwargs: {nonsense: 1}\n" + MINIMAL)
    assert error.problems[0].field == "voting_kwargs"
    assert "does not accept 'nonsense'" in str(error)


LABELLED = MINIMAL + "    labels: [PASS, FAIL]\n"


def test_a_priority_label_no_critic_gives_is_refused_at_its_keyword_and_line(
    tmp_path: Path,
) -> None:
    error = problem(
        tmp_path, "voting: majority\nvoting_kwargs:\n  priority: [FAIL, PASSS]\n" + LABELLED
    )
    (found,) = error.problems
    assert (found.field, found.line) == ("voting_kwargs.priority", 3)
    assert "'PASSS' is not a label the critics give (did you mean 'PASS'?)" in found.message
    assert "the critics' labels are PASS, FAIL" in found.message


def test_a_tier_target_no_critic_gives_is_refused_at_the_tier(tmp_path: Path) -> None:
    tier = "  - voting: any\n    voting_kwargs: {target: UNSAF}\n    critics:\n"
    critics = "      - {name: a, model: deepseek-chat, labels: [SAFE, UNSAFE]}\n"
    final = "  - critics:\n      - {name: b, model: deepseek-chat, labels: [SAFE, UNSAFE]}\n"
    error = problem(tmp_path, "tiers:\n" + tier + critics + final)
    assert error.problems[0].field == "tiers[0].voting_kwargs.target"
    assert "did you mean 'UNSAFE'?" in error.problems[0].message


def test_priority_labels_the_critics_give_load(tmp_path: Path) -> None:
    spec = load_panel(write(tmp_path, "voting_kwargs: {priority: [FAIL, PASS]}\n" + LABELLED))
    assert spec.voting_kwargs == {"priority": ["FAIL", "PASS"]}


def test_early_stop_with_a_score_strategy_is_reported_at_early_stop(tmp_path: Path) -> None:
    error = problem(tmp_path, "voting: average\nearly_stop: true\n" + MINIMAL)
    assert error.problems[0].field == "early_stop" and error.problems[0].line == 2


def test_min_valid_above_the_panel_size_is_refused(tmp_path: Path) -> None:
    error = problem(tmp_path, "min_valid: 3\n" + MINIMAL)
    assert ":1: min_valid: is 3, but the panel has 1 critics" in str(error)


def test_custom_vendor_without_base_url_is_reported_at_the_critic(tmp_path: Path) -> None:
    error = problem(tmp_path, MINIMAL + "    vendor: custom\n")
    assert error.problems[0].field == "critics[0]"
    assert "base_url" in str(error)


# -- no literal keys ----------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["api_key", "key", "token", "secret", "apiKey", "password"])
def test_literal_key_field_is_refused_without_echoing_it(tmp_path: Path, field: str) -> None:
    error = problem(tmp_path, MINIMAL + f"    {field}: {SECRET}\n")
    message = str(error)
    assert f"critics[0].{field}: a literal key in a panel file is refused" in message
    assert "api_key_env: DEEPSEEK_API_KEY" in message
    assert SECRET not in message and SECRET not in repr(error)


def test_literal_key_at_top_level_is_refused(tmp_path: Path) -> None:
    error = problem(tmp_path, f"api_key: {SECRET}\n" + MINIMAL)
    assert ":1: api_key: a literal key in a panel file is refused" in str(error)
    assert SECRET not in str(error)


def test_key_like_field_suggests_the_vendors_variable(tmp_path: Path) -> None:
    error = problem(tmp_path, MINIMAL + f"    vendor: openai\n    api_key: {SECRET}\n")
    assert "api_key_env: OPENAI_API_KEY" in str(error)


@pytest.mark.parametrize(
    "value", [SECRET, "sk-proj-abc123", "AIzaSyD0123456789abcdefghijkl", "not a name"]
)
def test_api_key_env_that_is_not_a_variable_name_is_refused_unechoed(
    tmp_path: Path, value: str
) -> None:
    error = problem(tmp_path, MINIMAL + f"    api_key_env: '{value}'\n")
    assert ":4: critics[0].api_key_env:" in str(error)
    assert "not shown" in str(error)
    assert value not in str(error)


def test_base_url_with_credentials_is_refused_unechoed(tmp_path: Path) -> None:
    url = f"https://user:{SECRET}@proxy.example/v1"
    error = problem(tmp_path, MINIMAL + f"    vendor: custom\n    base_url: {url}\n")
    assert ":5: critics[0].base_url: holds credentials" in str(error)
    assert SECRET not in str(error)


def test_base_url_must_be_http(tmp_path: Path) -> None:
    error = problem(tmp_path, MINIMAL + "    vendor: custom\n    base_url: ftp://host/v1\n")
    assert ":5: critics[0].base_url: uses the ftp:// scheme; cross-judge speaks http://" in str(
        error
    )


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://localhost:99999/v1", "has port '99999'; a port is a whole number from 1 to"),
        ("abc", "has no scheme; write it in full with http:// or https://"),
        ("'http://[::1/v1'", "is not a valid URL: check the brackets around an IPv6 host"),
        ("localhost:8080/v1", "has no scheme"),
    ],
)
def test_a_malformed_base_url_is_reported_at_its_critic_and_line(
    tmp_path: Path, url: str, says: str
) -> None:
    error = problem(
        tmp_path,
        MINIMAL + f"  - name: b\n    model: m\n    vendor: custom\n    base_url: {url}\n",
    )
    assert f":7: critics[1].base_url: {says}" in str(error)
    assert len(error.problems) == 1  # the healthy critic is fine


def test_max_tokens_typo_is_a_typo_not_a_secret(tmp_path: Path) -> None:
    error = problem(tmp_path, MINIMAL + "    max_token: 5\n")
    assert "did you mean 'max_tokens'?" in str(error)


# -- keys from the environment ------------------------------------------------------------------


def test_api_key_env_is_read_when_the_ensemble_is_built(tmp_path: Path) -> None:
    spec = load_panel(write(tmp_path, MINIMAL + "    api_key_env: MY_KEY\n"))
    ensemble = spec.build(environ={"MY_KEY": SECRET})
    assert ensemble.critics[0].api_key == SECRET


def test_api_key_env_defaults_to_os_environ(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_KEY", SECRET)
    spec = load_panel(write(tmp_path, MINIMAL + "    api_key_env: MY_KEY\n"))
    assert spec.build().critics[0].api_key == SECRET


def test_missing_api_key_env_variable_is_named_with_its_line(tmp_path: Path) -> None:
    spec = load_panel(write(tmp_path, MINIMAL + "    api_key_env: MY_KEY\n"))
    with pytest.raises(PanelError) as info:
        spec.build(environ={})
    assert ":4: critics[0].api_key_env: the environment variable MY_KEY is not set" in str(
        info.value
    )


def test_missing_vendor_default_variable_is_named(tmp_path: Path) -> None:
    spec = load_panel(write(tmp_path, MINIMAL))
    with pytest.raises(PanelError, match="DEEPSEEK_API_KEY is not set"):
        spec.build(environ={})


def test_vendor_default_variable_is_used_without_api_key_env() -> None:
    ensemble = parse_panel(MINIMAL).build(environ={"DEEPSEEK_API_KEY": SECRET})
    assert ensemble.critics[0].api_key == SECRET


def test_vendor_without_a_key_needs_no_variable() -> None:
    text = MINIMAL + "    vendor: custom\n    base_url: http://127.0.0.1:1/v1\n"
    ensemble = parse_panel(text + "    api_key_env: UNSET_VAR\n").build(environ={})
    assert ensemble.critics[0].api_key is None


def test_the_key_never_appears_in_a_repr_or_dump(tmp_path: Path) -> None:
    spec = load_panel(write(tmp_path, MINIMAL + "    api_key_env: MY_KEY\n"))
    ensemble = spec.build(environ={"MY_KEY": SECRET})
    shown = [repr(spec), repr(ensemble), str(ensemble), spec.model_dump_json()]
    shown.append(ensemble.critics[0].model_dump_json())
    assert all(SECRET not in text for text in shown)


# -- prompts ------------------------------------------------------------------------------------

PROMPT = """\
id: local-review
version: "2"
labels: [GOOD, BAD]
user_prompt_template: |
  Judge this; reply with JSON {{"kind": "GOOD"}}.
  <item>
  {query}
  </item>
"""


def test_relative_prompt_path_resolves_against_the_panel_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "config"
    (folder / "prompts").mkdir(parents=True)
    (folder / "prompts" / "review.yaml").write_text(PROMPT, encoding="utf-8")
    path = write(folder, MINIMAL + "    prompt: prompts/review.yaml\n")
    monkeypatch.chdir(tmp_path)  # not the panel's folder
    critic = load_panel(path).critics[0]
    assert critic.prompt_spec is not None and critic.prompt_spec.ref == "local-review@2"


def test_bare_prompt_file_name_next_to_the_panel_is_a_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "review.yaml").write_text(PROMPT, encoding="utf-8")
    path = write(tmp_path, MINIMAL + "    prompt: review.yaml@2\n")
    monkeypatch.chdir(Path(os.sep))
    spec = load_panel(path)
    assert spec.critics[0].prompt_spec is not None
    assert spec.build(environ={"DEEPSEEK_API_KEY": "x"}).critics[0].labels == ("GOOD", "BAD")


def test_missing_prompt_file_is_reported_at_the_prompt_field(tmp_path: Path) -> None:
    error = problem(tmp_path, MINIMAL + "    prompt: prompts/nope.yaml\n")
    assert ":4: critics[0].prompt:" in str(error) and "no such prompt file" in str(error)


def test_invalid_prompt_file_error_names_the_prompt_file(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("id: bad\nversion: '1'\n", encoding="utf-8")
    error = problem(tmp_path, MINIMAL + "    prompt: bad.yaml\n")
    assert "bad.yaml" in str(error) and "user_prompt_template" in str(error)


# -- simulated critics --------------------------------------------------------------------------

SIMULATED = """\
critics:
  - name: careful
    vendor: simulated
    prompt: taxonomy-review@1
    persona: {accuracy: 0.9, style: messy, bias: {KEEP: 2}}
  - name: quick
    vendor: simulated
    model: sim-quick
"""


def test_simulated_critics_become_personas_in_their_prompts_labels() -> None:
    spec = parse_panel(SIMULATED)
    assert spec.simulated_critics == ["careful", "quick"]
    careful, quick = spec.personas()
    assert isinstance(careful, Persona)
    assert careful.model == "sim-careful" and careful.style == "messy"
    assert careful.labels == ("KEEP", "REJECT", "SPLIT", "MERGE", "UNCLEAR")
    assert quick.model == "sim-quick"


def vendor_server_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("cross-judge-vendor-server-")}


@pytest.mark.anyio
async def test_the_shipped_panel_builds_and_judges_without_a_simulator_url() -> None:
    # As the README says: load_panel(path).build() gives a working Ensemble.
    spec = load_panel(EXAMPLES / "panel.yaml")
    assert spec.simulated_critics  # the shipped panel is the simulated one
    ensemble = spec.build()
    try:
        with anyio.fail_after(SAFETY_NET_S):
            result = await ensemble.judge("Felines (see also: Cats)")
    finally:
        await ensemble.aclose()
    assert result.n_valid == len(spec.critics), [v.error for v in result.verdicts]
    assert {v.model for v in result.verdicts} == {c.model_name for c in spec.critics}


def test_a_simulator_started_by_build_stops_with_its_ensemble() -> None:
    before = vendor_server_threads()
    ensemble = parse_panel(SIMULATED).build()
    started = vendor_server_threads() - before
    assert len(started) == 1 and all(t.is_alive() for t in started)
    assert ensemble.judge_sync("Felines (see also: Cats)").n_valid == 2

    del ensemble
    gc.collect()
    assert not any(t.is_alive() for t in started)


def test_a_missing_key_stops_build_before_a_simulator_is_started(tmp_path: Path) -> None:
    before = vendor_server_threads()
    with pytest.raises(PanelError, match="DEEPSEEK_API_KEY"):
        parse_panel(SIMULATED + MINIMAL.replace("critics:\n", "")).build(environ={})
    assert vendor_server_threads() - before == set()  # none started


def test_simulated_critics_answer_through_the_simulator() -> None:
    spec = parse_panel(SIMULATED)
    with spec.simulator() as server:
        ensemble = spec.build(simulator_url=server.url)
        result = ensemble.judge_sync("Felines (see also: Cats)")
    assert result.n_valid == 2
    assert {v.model for v in result.verdicts} == {"sim-careful", "sim-quick"}


def test_persona_on_a_real_vendor_is_refused(tmp_path: Path) -> None:
    error = problem(tmp_path, MINIMAL + "    persona: {accuracy: 0.5}\n")
    assert ":4: critics[0].persona: persona shapes simulated critics only" in str(error)


def test_simulated_critics_sharing_a_model_are_refused(tmp_path: Path) -> None:
    error = problem(
        tmp_path,
        """\
        critics:
          - {name: a, vendor: simulated, model: sim}
          - {name: b, vendor: simulated, model: sim}
        """,
    )
    assert ":3: critics[1].model: simulated critics are told apart by model" in str(error)


def test_invalid_persona_is_reported_at_persona(tmp_path: Path) -> None:
    error = problem(
        tmp_path,
        "critics:\n  - name: a\n    vendor: simulated\n    persona: {bias: {MAYBE: 1}}\n",
    )
    assert ":4: critics[0].persona: Persona.bias has labels not in Persona.labels" in str(error)


def test_unknown_persona_field_suggests_the_known_one(tmp_path: Path) -> None:
    error = problem(
        tmp_path, "critics:\n  - name: a\n    vendor: simulated\n    persona: {acuracy: 1}\n"
    )
    assert "critics[0].persona.acuracy" in str(error) and "did you mean 'accuracy'?" in str(error)
