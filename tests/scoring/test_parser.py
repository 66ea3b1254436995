"""The strict official parser: every error code, wrappers, extraction and the opt-in repairs
(spec 00_common.md 7.1 and 11.2). Expected values come from the spec's rules, worked by hand."""

from __future__ import annotations

import pytest

from hhx.config import DistributionConfig, FieldConfig, Mode, Shape, TargetType, TaskConfig
from hhx.scoring import ScoringError, error_code, parse_answer
from hhx.scoring.parser import parse_gold, parse_naive_baseline

LF = ["employed", "unemployed", "not_in_labor_force"]
BINS = ["inflation_ge_12", "inflation_8_12", "inflation_4_8", "inflation_2_4", "inflation_0_2",
        "deflation_0_2", "deflation_2_4", "deflation_4_8", "deflation_8_12", "deflation_ge_12"]


def numeric(name: str, fields: list[str]) -> TaskConfig:
    return TaskConfig(name=name, topic="t", mode=Mode.baseline, survey="s",
                      target_type=TargetType.numeric, shape=Shape.array,
                      fields=[FieldConfig(name=f) for f in fields])


def categorical(name: str, fields: dict[str, list[str]]) -> TaskConfig:
    return TaskConfig(name=name, topic="t", mode=Mode.policy, survey="s",
                      target_type=TargetType.categorical, shape=Shape.array,
                      fields=[FieldConfig(name=f, labels=lab) for f, lab in fields.items()])


def distribution(name: str, dists: dict[str, list[str]]) -> TaskConfig:
    return TaskConfig(name=name, topic="t", mode=Mode.baseline, survey="s",
                      target_type=TargetType.distribution, shape=Shape.distribution_array,
                      distributions=[DistributionConfig(name=d, labels=lab, columns=[d])
                                     for d, lab in dists.items()])


TOTAL = numeric("cons_cex_total", ["total_expenditure", "non_durable_expenditure",
                                   "durable_expenditure"])
JOBLOSS = numeric("cons_psid_jobloss", ["annual_food_spending"])
OUTLOOK = numeric("macro_mich_outlook", ["expected_inflation_1y",
                                         "expected_inflation_5_to_10y_annual"])
JOBFIND = categorical("labor_cps_jobfind", {"labor_force_status": LF})
OWNER = categorical("house_psid_owner", {"owns_home_next_wave": ["no", "yes"]})
MOVE = distribution("house_sce_move", {"move_probability_12m": ["no_move", "move"]})
SEARCH = distribution("labor_sce_search", {"find_acceptable_work_12m": ["not_found", "found"],
                                           "find_acceptable_work_3m": ["not_found", "found"]})
BINARY = ["not_higher", "higher"]
UNCERTAINTY = distribution("macro_sce_uncertainty", {
    "inflation_1y": BINS, "inflation_2_to_3y": BINS, "unemployment_higher": BINARY,
    "savings_rate_higher": BINARY, "stock_prices_higher": BINARY})


def err(task: TaskConfig, raw: object, **kw: bool) -> str | None:
    result = parse_answer(task, raw, **kw)
    assert result.valid is (result.error is None)
    return result.error


# --------------------------------------------------------------------------------------------
# Valid answers and extraction


def test_numeric_array_parses_to_floats_in_field_order():
    result = parse_answer(TOTAL, "[1662, 1067, 595]")
    assert result.valid and not result.repaired
    assert result.value == [1662.0, 1067.0, 595.0]
    assert all(type(v) is float for v in result.value)


def test_markdown_fence_and_prose_are_tolerated():
    fenced = 'Sure.\n```json\n["not_in_labor_force"]\n```\nHope this helps.'
    assert parse_answer(JOBFIND, fenced).value == ["not_in_labor_force"]
    prose = "My estimate is [10.0, 13.5] for the two horizons."
    assert parse_answer(OUTLOOK, prose).value == [10.0, 13.5]


def test_first_list_beats_an_earlier_string_candidate():
    # Candidates in text order: the string "employed" (from the first quote), then the list.
    # The first list/object wins over any earlier scalar candidate.
    assert parse_answer(JOBFIND, 'Label "employed": ["unemployed"]').value == ["unemployed"]


def test_lone_string_candidate_fails_the_type_check():
    assert err(JOBFIND, 'I would say "employed".') == "expected_json_array"
    assert err(JOBFIND, "no idea at all") == "expected_json_array"


def test_think_block_is_dropped_with_or_without_newline():
    assert parse_answer(OUTLOOK, "<think>reasoning [1, 2]</think>\n[10.0, 13.0]").value == [10, 13]
    assert parse_answer(MOVE, "<think>\n\n</think>\n\n[[0.75, 0.25]]").value == [[0.75, 0.25]]
    assert parse_answer(MOVE, "<think>\n\n</think>[[0.75, 0.25]]").value == [[0.75, 0.25]]


def test_only_the_first_closing_think_tag_splits():
    # Text after the first </think> is "[1, 2] </think> [3, 4]": not whole-text JSON, so the
    # scan takes the first list, [1, 2].
    assert parse_answer(OUTLOOK, "a</think>[1, 2] </think> [3, 4]").value == [1.0, 2.0]


def test_without_closing_tag_the_first_json_anywhere_is_taken():
    # Known quirk (spec 12.9): an unterminated reasoning block's own list is taken.
    assert parse_answer(OUTLOOK, "<think>maybe [1, 2]... final: [3, 4]").value == [1.0, 2.0]


def test_non_string_prediction_is_used_as_is():
    assert parse_answer(TOTAL, [1, 2, 3]).value == [1.0, 2.0, 3.0]
    assert parse_answer(MOVE, [[0.5, 0.5]]).value == [[0.5, 0.5]]
    assert err(TOTAL, None) == "expected_json_array"
    assert err(MOVE, {"move": 0.5}) == "expected_distribution_array"


# --------------------------------------------------------------------------------------------
# Every error code


def test_empty_response():
    assert err(TOTAL, "") == "empty_response"
    assert err(TOTAL, "  \n ") == "empty_response"
    assert err(TOTAL, "<think>all my reasoning</think>  ") == "empty_response"


def test_keyed_object_is_rejected():
    raw = '{"total_expenditure": 1662, "non_durable_expenditure": 1067, "durable_expenditure": 595}'
    assert err(TOTAL, raw) == "expected_json_array"


def test_wrong_array_length():
    assert err(TOTAL, "[1, 2]") == "expected_3_array_elements"
    assert err(JOBFIND, '["employed", "employed"]') == "expected_1_array_elements"


def test_booleans_are_not_numbers():
    assert err(TOTAL, "[true, 1, 2]") == "total_expenditure:expected_number"
    assert err(TOTAL, '[1, "2", 3]') == "non_durable_expenditure:expected_number"
    assert err(TOTAL, "[1, 2, null]") == "durable_expenditure:expected_number"


def test_non_finite_numbers_are_rejected():
    # Python's json reads NaN, Infinity and overflowing literals as floats: all rejected.
    assert err(TOTAL, "[NaN, 1, 2]") == "total_expenditure:non_finite_number"
    assert err(TOTAL, "[1, -Infinity, 2]") == "non_durable_expenditure:non_finite_number"
    assert err(TOTAL, "[1, 2, 1e400]") == "durable_expenditure:non_finite_number"


def test_labels_are_case_sensitive_and_listed_in_scorer_order():
    assert parse_answer(JOBFIND, '["not_in_labor_force"]').valid
    assert err(JOBFIND, '["Not_in_labor_force"]') == (
        "labor_force_status:invalid_label:'Not_in_labor_force';"
        "allowed=employed,unemployed,not_in_labor_force")


def test_numeric_labels_become_ints_and_non_labels_are_rejected():
    # 1.0 is integral -> the int 1 (repr "1"), which is not a label of this task.
    assert err(OWNER, "[1.0]") == "owns_home_next_wave:invalid_label:1;allowed=no,yes"
    assert err(OWNER, "[1.5]") == "owns_home_next_wave:expected_categorical_label"
    assert err(OWNER, "[true]") == "owns_home_next_wave:expected_categorical_label"
    assert err(OWNER, '[["yes"]]') == "owns_home_next_wave:expected_categorical_label"


def test_distribution_shape_errors():
    assert err(MOVE, '"0.5"') == "expected_distribution_array"
    assert err(MOVE, "[0.75, 0.25]") == "expected_1_distributions"
    assert err(SEARCH, "[[0.5, 0.5], 0.5]") == "find_acceptable_work_3m:expected_probability_vector"
    assert err(SEARCH, "[[0.5, 0.5], [1.0]]") == "find_acceptable_work_3m:expected_2_probabilities"
    assert err(UNCERTAINTY, "[[0.5, 0.5]]") == "expected_5_distributions"


def test_distribution_value_errors():
    assert err(MOVE, "[[-0.1, 1.1]]") == "move_probability_12m:probability_out_of_range"
    assert err(MOVE, "[[0.75, 0.20]]") == "move_probability_12m:probabilities_must_sum_to_one"
    assert err(MOVE, "[[true, 0]]") == "move_probability_12m:expected_number"
    assert err(MOVE, "[[NaN, 1]]") == "move_probability_12m:non_finite_number"
    # Values are checked one by one, in order: 1.5 is out of range before "x" is reached.
    assert err(MOVE, '[[1.5, "x"]]') == "move_probability_12m:probability_out_of_range"


def test_sum_tolerance_is_absolute_1e6_without_renormalisation():
    # |0.7000004 + 0.3 - 1| = 4e-7 <= 1e-6: accepted, values kept as given.
    assert parse_answer(MOVE, "[[0.7000004, 0.3]]").value == [[0.7000004, 0.3]]
    # |0.700002 + 0.3 - 1| = 2e-6 > 1e-6: rejected.
    assert err(MOVE, "[[0.700002, 0.3]]") == "move_probability_12m:probabilities_must_sum_to_one"


def test_gold_and_naive_baseline_parse_strictly():
    assert parse_gold(TOTAL, "[1662, 1067, 595]") == [1662.0, 1067.0, 595.0]
    with pytest.raises(ValueError, match=r"^Invalid gold answer for cons_cex_total: expected_3"):
        parse_gold(TOTAL, "[1, 2]")
    # Repairs never apply to gold: "[2,530]" is two numbers, not one.
    with pytest.raises(ScoringError, match="Invalid gold answer"):
        parse_gold(JOBLOSS, "[2,530]")
    assert parse_naive_baseline(TOTAL, "[0, 1, 2]") == [0.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="^Invalid naive baseline for cons_cex_total"):
        parse_naive_baseline(TOTAL, None)
    with pytest.raises(ValueError, match="^Invalid naive baseline"):
        parse_naive_baseline(JOBFIND, '["unemployed"]')


# --------------------------------------------------------------------------------------------
# Number-formatting repair


def test_thousands_separators_only_with_the_flag():
    # JSON reads 6 elements from "[6,620, 3,800, 2,820]".
    assert err(TOTAL, "[6,620, 3,800, 2,820]") == "expected_3_array_elements"
    result = parse_answer(TOTAL, "[6,620, 3,800, 2,820]", repair_number_formatting=True)
    assert result.valid and result.repaired
    assert result.value == [6620.0, 3800.0, 2820.0]


def test_number_repair_cases():
    # "[1,024]" is not JSON at all (leading zero), unlike "[2,530]".
    assert err(JOBLOSS, "[1,024]") == "expected_json_array"
    assert parse_answer(JOBLOSS, "[1,024]", repair_number_formatting=True).value == [1024.0]
    assert parse_answer(JOBLOSS, "[-$21,000]", repair_number_formatting=True).value == [-21000.0]
    assert parse_answer(JOBLOSS, "<think>$</think> [$2,530.50]",
                        repair_number_formatting=True).value == [2530.5]


def test_compact_array_is_never_rewritten():
    # "2576,757" matches the separator pattern, but the strict parse already succeeds.
    strict = parse_answer(TOTAL, "[3333,2576,757]")
    lenient = parse_answer(TOTAL, "[3333,2576,757]", repair_number_formatting=True)
    assert strict.value == lenient.value == [3333.0, 2576.0, 757.0]
    assert not lenient.repaired


def test_unrepairable_keeps_original_error_and_repair_is_numeric_only():
    # Repair gives "[100200300400]" (one element): still invalid, so the original error stays.
    assert err(TOTAL, "[100,200,300,400]", repair_number_formatting=True) == (
        "expected_3_array_elements")
    assert err(MOVE, "[0.75, 0.25]", repair_number_formatting=True) == "expected_1_distributions"
    assert err(JOBFIND, '["$employed"]', repair_number_formatting=True).startswith(
        "labor_force_status:invalid_label")
    # Already-decoded values are never repaired.
    assert err(JOBLOSS, [2, 530], repair_number_formatting=True) == "expected_1_array_elements"


# --------------------------------------------------------------------------------------------
# Distribution-nesting repair


def test_single_distribution_missing_outer_list():
    raw = "<think>\n\n</think>\n\n[0.985, 0.015]"
    assert err(MOVE, raw) == "expected_1_distributions"
    result = parse_answer(MOVE, raw, repair_distribution_nesting=True)
    assert result.valid and result.repaired and result.value == [[0.985, 0.015]]


def test_two_vectors_without_outer_list():
    raw = "[0.96, 0.04], [0.97, 0.03]"
    # Strict: whole text is not JSON; the first list found is [0.96, 0.04] -> its first
    # element 0.96 is not a vector.
    assert err(SEARCH, raw) == "find_acceptable_work_12m:expected_probability_vector"
    result = parse_answer(SEARCH, raw, repair_distribution_nesting=True)
    assert result.value == [[0.96, 0.04], [0.97, 0.03]] and result.repaired


def test_flattened_vector_is_split_by_label_counts():
    assert err(SEARCH, "[0.65, 0.35, 0.2, 0.8]") == "expected_2_distributions"
    result = parse_answer(SEARCH, "[0.65, 0.35, 0.2, 0.8]", repair_distribution_nesting=True)
    assert result.value == [[0.65, 0.35], [0.2, 0.8]]
    # 10 + 10 + 2 + 2 + 2 = 26 values, split in order.
    flat = [0.1] * 20 + [0.4, 0.6] * 3
    result = parse_answer(UNCERTAINTY, str(flat), repair_distribution_nesting=True)
    assert result.valid and [len(v) for v in result.value] == [10, 10, 2, 2, 2]
    assert result.value[4] == [0.4, 0.6]


def test_nesting_repair_still_enforces_range_sum_and_count():
    # Right shape after re-nesting but sums to 1.2: invalid, ORIGINAL error kept.
    assert err(MOVE, "[0.6, 0.6]", repair_distribution_nesting=True) == "expected_1_distributions"
    assert err(MOVE, "[-0.1, 1.1]", repair_distribution_nesting=True) == "expected_1_distributions"
    # Six vectors where five are expected: not truncated into shape.
    six = ", ".join(["[0.5, 0.5]"] * 6)
    assert not parse_answer(UNCERTAINTY, f"[{six}]", repair_distribution_nesting=True).valid
    assert not parse_answer(UNCERTAINTY, six, repair_distribution_nesting=True).valid


def test_nesting_repair_leaves_valid_answers_and_other_tasks_alone():
    lenient = parse_answer(MOVE, "[[0.985, 0.015]]", repair_distribution_nesting=True)
    assert lenient.valid and not lenient.repaired
    assert err(TOTAL, "[1.0, 2.0]", repair_distribution_nesting=True) == (
        "expected_3_array_elements")


# --------------------------------------------------------------------------------------------
# Error families


@pytest.mark.parametrize("error, code", [
    ("empty_response", "empty_response"),
    ("expected_json_array", "expected_json_array"),
    ("expected_3_array_elements", "expected_n_array_elements"),
    ("expected_5_distributions", "expected_n_distributions"),
    ("inflation_1y:expected_10_probabilities", "expected_n_probabilities"),
    ("labor_force_status:invalid_label:'a:b';allowed=employed", "invalid_label"),
    ("total_expenditure:non_finite_number", "non_finite_number"),
    ("move_probability_12m:probabilities_must_sum_to_one", "probabilities_must_sum_to_one"),
    ("Prediction row has no configured response field 'x'", "missing_response_field"),
    ("missing_prediction", "missing_prediction"),
    ("time_mismatch", "time_mismatch"),
])
def test_error_code_families(error, code):
    assert error_code(error) == code


def test_error_codes_of_real_parse_errors():
    assert error_code(err(JOBFIND, '["x"]')) == "invalid_label"
    assert error_code(err(OWNER, "[null]")) == "expected_categorical_label"
    assert error_code(err(SEARCH, "[[0.5, 0.5], 1]")) == "expected_probability_vector"


# --------------------------------------------------------------------------------------------
# Hostile answers: the reference's classification, no traceback, linear extraction


def test_an_integer_beyond_python_s_digit_limit_at_any_start_is_invalid_as_in_the_reference():
    huge = "9" * 5000
    # json.loads of the whole text and the decode at the second "[" raise int()'s ValueError;
    # the reference stops there although a valid array came first
    message = ("Exceeds the limit (4300 digits) for integer string conversion: value has 5000 "
               "digits; use sys.set_int_max_str_digits() to increase the limit")
    assert err(JOBFIND, f'["employed"] [{huge}]') == message
    assert err(JOBFIND, f"[{huge}]") == message
    assert error_code(message) == "integer_too_long"
    # not at a start: the valid array wins, as in the reference
    assert err(JOBFIND, f'["employed"] {huge}') is None


def test_a_400_digit_integer_in_a_numeric_slot_is_non_finite():
    assert err(JOBLOSS, "[" + "9" * 400 + "]") == "annual_food_spending:non_finite_number"
    assert err(MOVE, "[[0.5, " + "1" * 400 + "]]") == "move_probability_12m:non_finite_number"
    assert err(JOBFIND, "[" + "7" * 400 + "]").startswith("labor_force_status:invalid_label:")


def test_nesting_beyond_the_decoder_s_limit_is_classified():
    deep = ("[" * 5000, "[" * 5000 + "]" * 5000, "x " + '{"a": ' * 3000, "[1] " + "[" * 5000)
    for raw in deep:
        assert err(JOBFIND, raw) == "nesting_too_deep"
    assert error_code("nesting_too_deep") == "nesting_too_deep"
    # the repair decodes value after value: a deep value there keeps the original error
    assert err(MOVE, "[0.5] " + "[" * 5000, repair_distribution_nesting=True) == (
        "nesting_too_deep")


def _oracle(text: str):
    """The reference's rule, one `raw_decode` per start (quadratic, fine for short texts)."""
    import json

    from hhx.scoring.extract import ExtractionError, _extract_by_trying_every_start

    try:
        return ("ok", repr(json.loads(text)))
    except json.JSONDecodeError:
        pass
    except RecursionError:
        return ("error", "nesting_too_deep")
    except ValueError as exc:
        return ("error", str(exc))
    try:
        return ("ok", repr(_extract_by_trying_every_start(text)))
    except ExtractionError as exc:
        return ("error", str(exc))
    except ValueError as exc:
        return ("error", str(exc))


def _linear(text: str):
    import json

    from hhx.scoring.extract import ExtractionError, _extract_linear

    try:
        return ("ok", repr(json.loads(text)))
    except json.JSONDecodeError as exc:
        first = exc
    except RecursionError:
        return ("error", "nesting_too_deep")
    except ValueError as exc:
        return ("error", str(exc))
    try:
        return ("ok", repr(_extract_linear(text, first)))
    except ExtractionError as exc:
        return ("error", str(exc))
    except ValueError as exc:
        return ("error", str(exc))


def test_linear_extraction_equals_the_reference_rule_on_random_texts(monkeypatch):
    import random
    import sys

    monkeypatch.setattr(sys, "get_int_max_str_digits", lambda: 640)  # cheaper huge integers
    sys.set_int_max_str_digits(640)
    try:
        tokens = ['[', ']', '{', '}', '"', '\\', ',', ':', ' ', '1', '0', '-', '.', 'e', '+',
                  'u', 't', '\x01', '\n', 'true', 'null', 'NaN', '-Infinity', '"x"', '"\\u00e9"',
                  '\\"', '\\\\', '\\u12', '[1,2]', '{"a":1}', '{"a":', '"a":', ':1}', '{}',
                  '[]', ', ', '9' * 639, '9' * 641, '[[[[', ']]]]', '0.5', '1e5', '"[', '["']
        rng = random.Random(20261201)
        for _ in range(1200):
            text = "".join(rng.choice(tokens) for _ in range(rng.randint(1, 30))).strip()
            if text:
                assert _linear(text) == _oracle(text), text
    finally:
        sys.set_int_max_str_digits(4300)


@pytest.mark.slow
def test_linear_extraction_equals_the_reference_rule_near_the_depth_limit():
    from hhx.scoring.extract import decoder_depth_limit

    limit = decoder_depth_limit()
    for d in (limit - 70, limit, limit + 3):
        for text in ("x" + "[" * d, "x" + "[" * d + "]" * d, "x" + "[" * d + "1" + "]" * d +
                     " [0.5]", "[0.5] x " + "[" * d + "]" * d, "x" + '{"a":' * d + "1" + "}" * d,
                     "x" + "[" * d + "1, " * 50, '"' + "[" * d + '" [1]'):
            assert _linear(text) == _oracle(text), (d, text[:40])


def test_long_hostile_answers_are_decided_like_the_reference():
    escaped = '\\"' * 20_000  # the 40 KB answer
    assert err(JOBFIND, escaped) == "expected_json_array"
    assert err(JOBFIND, "the answer is " * 3000 + '["employed"]') is None
    assert err(JOBFIND, "[1, " * 1 + "1, " * 20_000) == "expected_json_array"
    assert err(JOBFIND, '"[' * 20_000) == "expected_json_array"
    assert err(JOBFIND, "[]" * 20_000) == "expected_1_array_elements"


def test_renesting_scan_equals_decoding_value_after_value():
    """The repair's linear scan finds the same vectors as the reference's loop, which decodes
    one value after another (separated by whitespace/commas) until one does not decode."""
    import json
    import random

    from hhx.scoring.parser import _renest, answer_spec

    def reference(text, spec):
        decoder, values, i = json.JSONDecoder(), [], 0
        try:
            while i < len(text):
                while i < len(text) and text[i] in " \t\r\n,":
                    i += 1
                if i >= len(text):
                    break
                try:
                    value, i = decoder.raw_decode(text, i)
                except json.JSONDecodeError:
                    break
                values.append(value)
        except (ValueError, RecursionError):
            return None  # the reference crashes; hhx keeps the original error
        sizes = [len(lab) for lab in spec.labels]
        vectors = [v for v in values if isinstance(v, list)]
        if len(vectors) == len(sizes) and all(len(v) == k for v, k in zip(vectors, sizes)):
            return vectors
        if len(vectors) == 1 and len(vectors[0]) == sum(sizes):
            return [vectors[0][:2], vectors[0][2:]] if len(sizes) == 2 else [vectors[0]]
        return None

    tokens = ["[0.5, 0.5]", "[0.2,0.8]", "[1]", "0.5", ",", " ", '"x"', "true", "NaN", "{}",
              '{"a": [1]}', "x", "[", "]", "1e5", "01", "-", "[0.1, 0.9, 0.5, 0.5]", '"[1,2]"']
    rng = random.Random(7)
    for spec in (answer_spec(MOVE), answer_spec(SEARCH)):
        for _ in range(1500):
            text = "".join(rng.choice(tokens) for _ in range(rng.randint(1, 12)))
            try:
                got = _renest(text, spec)
            except (ValueError, RecursionError):
                got = None
            assert got == reference(text, spec), text
