"""The fused top-k/top-p filter keeps exactly the tokens transformers' two warpers keep."""

import pytest
import torch
from transformers import TopKLogitsWarper, TopPLogitsWarper

from generation.sampling import TopKTopP


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
