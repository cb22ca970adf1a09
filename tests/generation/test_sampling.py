"""The fused top-k/top-p filter keeps exactly the tokens transformers' two warpers keep."""

import pytest
import torch
from transformers import TopKLogitsWarper, TopPLogitsWarper

from generation.sampling import Decoding, Interrupted, StopWhen, TopKTopP, sample_continuations


@pytest.mark.parametrize(("top_k", "top_p"), [(50, 0.95), (50, 1.0), (5, 0.5), (1, 0.9), (200, 0.3)])
def test_it_keeps_the_same_tokens_as_top_k_then_top_p(top_k, top_p):
    torch.manual_seed(0)
    scores = torch.randn(64, 1000) * 3
    expected = TopPLogitsWarper(top_p)(None, TopKLogitsWarper(top_k)(None, scores.clone()))
    fused = TopKTopP(top_k, top_p)(None, scores.clone())
    assert torch.equal(torch.isinf(fused), torch.isinf(expected))
    kept = ~torch.isinf(fused)
    assert torch.equal(fused[kept], scores[kept])
    assert kept.sum(-1).min() >= 1


def test_stop_when_asks_only_after_its_interval_and_then_ends_every_row():
    asked = []
    criterion = StopWhen(lambda: asked.append(1) or len(asked) >= 2, interval=0.0)
    ids = torch.zeros((3, 4), dtype=torch.long)

    first, second = criterion(ids, None), criterion(ids, None)

    assert not first.any() and second.all() and criterion.fired
    assert criterion(ids, None).all() and len(asked) == 2  # once fired, it asks no more
    patient = StopWhen(lambda: True, interval=3600.0)
    assert not patient(ids, None).any() and patient.asked == 0


@pytest.mark.slow
def test_a_stop_inside_one_generate_call_ends_it_early_and_returns_nothing(loaded_model):
    decoding = Decoding(samples=2, max_new_tokens=40)
    steps = []

    def stop() -> bool:  # asked once per decoding step (interval 0): True from the third step on
        steps.append(1)
        return len(steps) >= 3

    with pytest.raises(Interrupted) as raised:
        sample_continuations(
            loaded=loaded_model, contexts=["Alex said that"], decoding=decoding, seed=1, stop=stop, stop_interval=0.0
        )

    assert len(steps) == 3  # not the 40 steps the call would otherwise take
    assert "stopped after 3 new tokens" in str(raised.value)


@pytest.mark.slow
def test_a_stop_that_never_fires_changes_nothing(loaded_model):
    decoding = Decoding(samples=2, max_new_tokens=8)
    plain = sample_continuations(loaded=loaded_model, contexts=["Alex said that"], decoding=decoding, seed=4)
    polled = sample_continuations(
        loaded=loaded_model,
        contexts=["Alex said that"],
        decoding=decoding,
        seed=4,
        stop=lambda: False,
        stop_interval=0.0,
    )
    assert polled == plain
