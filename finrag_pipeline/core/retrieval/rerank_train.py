"""Fine-tune a small cross-encoder HERE, offline, on (question, candidate) pairs of synthetic questions.

No cross-encoder weights ship offline, so the only cross-encoder this project can use is one it trains
itself: the local all-MiniLM-L6-v2 (the embedder's weights) with a new one-logit head, trained on the
synthetic questions of the TRAINING filings (rerank_fit.split_by_filing) with binary cross-entropy.
Positives: candidates of the base retriever on an evidence page of the question; negatives: the other
candidates of the same question (the base retriever's hard negatives). The directory written here is
what ``reranker: {type: cross_encoder, model_path: ...}`` loads (rerank.CrossEncoderReranker).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from finrag_pipeline.core.models import Hit

# The manifest a trained directory carries: what it was trained on, so a result can be traced to it.
MANIFEST_NAME = "finrag_training.json"


@dataclass(frozen=True)
class TrainingPair:
    question: str
    passage: str
    label: float     # 1.0: the candidate lies on an evidence page; 0.0: it does not


def is_evidence_hit(hit: Hit, evidence_pages: set[tuple[str, int]]) -> bool:
    return any((hit.filing_id, p) in evidence_pages for p in hit.pages)


def training_pairs(examples: Iterable[tuple[str, set[tuple[str, int]], Sequence[Hit]]], *,
                   positives_per_question: int = 2, negatives_per_question: int = 4, seed: int = 0,
                   max_passage_chars: int = 1200) -> list[TrainingPair]:
    """Pairs from (question, evidence pages, base candidates in rank order).

    The best-ranked positives are kept (the ones a reranker must lift), negatives are drawn at random
    among the other candidates with a seeded generator, so the same inputs give the same pairs.
    A question whose candidates hold no evidence page gives only negatives (it still teaches what is
    not an answer) and one with no candidates gives nothing."""
    rng = random.Random(seed)
    out: list[TrainingPair] = []
    for question, evidence, hits in examples:
        pos = [h for h in hits if is_evidence_hit(h, evidence)]
        neg = [h for h in hits if not is_evidence_hit(h, evidence)]
        for h in pos[:positives_per_question]:
            out.append(TrainingPair(question, h.text[:max_passage_chars], 1.0))
        for h in rng.sample(neg, min(len(neg), negatives_per_question)):
            out.append(TrainingPair(question, h.text[:max_passage_chars], 0.0))
    return out


@dataclass(frozen=True)
class TrainingRun:
    base_model: str
    output_dir: str
    n_questions: int
    n_pairs: int
    n_positive: int
    max_length: int
    epochs: int
    batch_size: int
    learning_rate: float
    seed: int
    seconds: float
    train_filings: tuple[str, ...] = ()


def train_cross_encoder(pairs: Sequence[TrainingPair], base_model_path: str | Path, output_dir: str | Path, *,
                        max_length: int = 192, epochs: int = 1, batch_size: int = 16, learning_rate: float = 3e-5,
                        seed: int = 0, n_questions: int = 0, train_filings: Sequence[str] = ()) -> TrainingRun:
    """Fine-tune ``base_model_path`` (a local sentence-transformers directory) into a one-logit cross-encoder
    saved at ``output_dir`` with a manifest. Needs both labels: a run on one class would learn a constant."""
    labels = {p.label for p in pairs}
    if labels != {0.0, 1.0}:
        raise ValueError(f"cross-encoder training needs positive and negative pairs, got labels {sorted(labels)} "
                         f"over {len(pairs)} pairs (no candidate on an evidence page, or no negatives)")
    import torch
    from datasets import Dataset
    from sentence_transformers.cross_encoder import (
        CrossEncoder,
        CrossEncoderTrainer,
        CrossEncoderTrainingArguments,
    )
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

    torch.manual_seed(seed)
    output_dir = Path(output_dir)
    t0 = time.perf_counter()
    model = CrossEncoder(str(base_model_path), num_labels=1, max_length=max_length, device="cpu",
                         local_files_only=True)
    ds = Dataset.from_dict({"query": [p.question for p in pairs], "passage": [p.passage for p in pairs],
                            "label": [p.label for p in pairs]})
    args = CrossEncoderTrainingArguments(
        output_dir=str(output_dir / "_trainer"), num_train_epochs=epochs, per_device_train_batch_size=batch_size,
        learning_rate=learning_rate, warmup_ratio=0.1, save_strategy="no", logging_steps=10, report_to=[],
        seed=seed, data_seed=seed, use_cpu=True, dataloader_num_workers=0)
    CrossEncoderTrainer(model=model, args=args, train_dataset=ds, loss=BinaryCrossEntropyLoss(model)).train()
    model.save_pretrained(str(output_dir))
    run = TrainingRun(str(base_model_path), str(output_dir), n_questions, len(pairs),
                      int(sum(p.label for p in pairs)), max_length, epochs, batch_size, learning_rate, seed,
                      round(time.perf_counter() - t0, 1), tuple(train_filings))
    (output_dir / MANIFEST_NAME).write_text(json.dumps(asdict(run), indent=2))
    return run
