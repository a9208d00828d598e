"""The cost model (bench/cost_model.py) and the docs it writes: the generated sections of docs/deploy.md and
docs/architecture.md are what the stored figures (bench/cost_measured.json) render, the prices are one copy
with their sources, and the model prices what was counted the way DynamoDB, S3 and Lambda bill it."""

from __future__ import annotations

import copy

import pytest
from bench import cost, cost_model, monthly_cost, prices
from hypothesis import given
from hypothesis import strategies as st

from tests.support import ROOT


@pytest.mark.parametrize(("file", "name"), [(f, n) for f, n, _ in cost.SECTIONS])
def test_each_generated_section_is_what_the_stored_figures_render(file: str, name: str) -> None:
    text = (ROOT / file).read_text(encoding="utf-8")
    render = next(r for f, n, r in cost.SECTIONS if (f, n) == (file, name))
    assert cost.rendered(text, name, render(cost.stored())) == text, f"run `python -m bench.cost --docs` ({file})"


def test_a_changed_figure_makes_the_page_drift() -> None:
    """The check above would fail: a figure changed in the stored measurements changes the rendered notes."""
    measured = copy.deepcopy(cost.stored())
    text = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    measured["event path"]["steps"]["ingest novel"]["write_units"] += 1
    assert cost.rendered(text, "cost-notes", cost_model.notes_markdown(measured)) != text


def test_a_page_without_the_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="cost-notes"):
        cost.rendered("no markers here", "cost-notes", "body")


def test_every_price_names_its_page_and_date_and_the_worked_month_reads_the_same_copy() -> None:
    for name, p in prices.PRICES.items():
        assert p.source.startswith("https://aws.amazon.com/"), name
        assert p.recorded == prices.RECORDED and p.dollars > 0, name
    assert prices.price("dynamodb_read_unit") == monthly_cost.READ_UNIT
    assert prices.price("lambda_gb_second") == monthly_cost.LAMBDA_GB_SECOND
    assert prices.price("glue_request") == monthly_cost.GLUE_REQUEST


def test_a_run_s_requests_are_the_dispatcher_s_and_what_its_records_cost_the_resolver_after_the_claim() -> None:
    """A run is priced from three counted steps: the claim (what a claiming resolver invocation asks beyond one
    that claims nothing), the dispatch, and the resolver's invocation on the run's own records."""
    measured = cost.stored()
    steps = cost_model.steps(measured)
    after, claim = cost_model.run_requests(measured)
    beyond = steps["resolver, claim"].total_requests() - steps["resolver, no run"].total_requests()
    later = steps.get("resolver, after the run started")
    assert claim == beyond >= 1
    assert after == steps["dispatcher"].total_requests() + (later.total_requests() if later else 0)
    # a copy is refused by the event item's condition: never more units than a novel event (a refused transaction is
    # priced as its items' writes, as a refused conditional write is priced as one)
    assert steps["ingest duplicate"].write_units <= steps["ingest novel"].write_units


def test_s3_list_is_priced_as_the_dearer_class_and_head_as_a_get() -> None:
    get = cost_model.Step({"s3 GetObject": 1}, 0, 0, 0).request_dollars()
    head = cost_model.Step({"s3 HeadObject": 1}, 0, 0, 0).request_dollars()
    listing = cost_model.Step({"s3 ListObjects": 1}, 0, 0, 0).request_dollars()
    assert get == head == prices.price("s3_get") and listing == 12.5 * get


@given(st.sampled_from(["PutItem", "UpdateItem", "DeleteItem"]), st.booleans(), st.integers(0, 100_000))
def test_a_write_is_one_unit_whatever_it_asks(operation: str, consistent: bool, answer: int) -> None:
    assert cost_model.units(operation, {"ConsistentRead": consistent}, answer) == (0.0, 1.0)


@given(st.integers(1, 100), st.integers(0, 25))
def test_transactions_cost_two_units_an_item_and_batch_reads_one_a_key(items: int, keys: int) -> None:
    assert cost_model.units("TransactWriteItems", {"TransactItems": [{}] * items}, 0) == (0.0, 2.0 * items)
    request = {"RequestItems": {"t": {"Keys": [{}] * keys, "ConsistentRead": True}}}
    assert cost_model.units("BatchGetItem", request, 0) == (float(keys), 0.0)


@given(st.integers(0, 1_000_000), st.booleans())
def test_a_read_costs_a_unit_per_4_kb_halved_when_eventually_consistent(size: int, consistent: bool) -> None:
    read, write = cost_model.units("Query", {"ConsistentRead": consistent}, size)
    whole = max(1, -(-size // 4096))
    assert write == 0 and read == whole * (1.0 if consistent else 0.5)


@given(st.integers(128, 10_240), st.floats(0.1, 1000))
def test_below_a_full_vcpu_the_cpu_costs_the_same_gb_seconds_at_any_size(memory_mb: int, cpu_ms: float) -> None:
    """Half the memory, twice the time: only the requests' waiting favours a small size."""
    step = cost_model.Step({}, 0, 0, cpu_ms)
    gb_ms = step.duration_ms(memory_mb) * memory_mb / 1024
    if memory_mb <= cost_model.VCPU_MB:
        assert gb_ms == pytest.approx(cpu_ms * cost_model.VCPU_MB / 1024)
    else:
        assert step.duration_ms(memory_mb) == pytest.approx(cpu_ms)
    assert 0 < cost_model.cpu_share(memory_mb) <= 1


def test_commit_notices_poll_a_table_a_twelfth_as_often_with_the_template_s_defaults() -> None:
    """Every minute: 43,200 checks a month; with notices: the hourly safety net and the 15-minute compensation."""
    assert cost_model.polls_a_month(notices=False) == 43_200
    assert cost_model.polls_a_month(notices=True) == 720 + 2_880


def test_a_fleet_s_month_grows_with_each_counted_request() -> None:
    """One more storage request per unchanged check adds its price times the checks, and nothing else."""
    measured = copy.deepcopy(cost.stored())
    before = cost_model.table_month(measured, "hudi", notices=False)
    measured["polls"]["hudi"]["unchanged"]["requests"]["s3 ListObjects"] += 1
    after = cost_model.table_month(measured, "hudi", notices=False)
    checks = cost_model.TABLES * cost_model.polls_a_month(notices=False)
    assert after["catalog / storage"] - before["catalog / storage"] == pytest.approx(
        checks * prices.price("s3_put_list")
    )
    assert after["DynamoDB"] == before["DynamoDB"] and after["planner"] == before["planner"]
