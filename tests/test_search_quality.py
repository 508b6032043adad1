"""The evaluation harness of benchmarks/search_quality.py: stratified folds and cross-validated choice."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import search_quality as SQ  # noqa: E402, N812


def test_folds_are_stratified_by_kind_and_deterministic() -> None:
    qs = [{"kind": "a"}] * 10 + [{"kind": "b"}] * 5
    folds = SQ.folds_of(qs, 5)
    assert folds == SQ.folds_of(qs, 5)
    for f in range(5):
        assert sum(1 for i, x in enumerate(folds) if x == f and i < 10) == 2  # kind a: two per fold
        assert sum(1 for i, x in enumerate(folds) if x == f and i >= 10) == 1  # kind b: one per fold
    assert folds != SQ.folds_of(qs, 5, seed=1)


def test_cross_validation_scores_each_fold_with_a_setting_chosen_on_the_others() -> None:
    # 4 answerable questions then 4 unanswerable; fold i holds questions i and i + 4
    answerable = [True] * 4 + [False] * 4
    folds = [0, 1, 2, 3] * 2
    # setting 0 abstains on nothing; setting 1 abstains on the unanswerable ones except in fold 3, where
    # it also abstains on the answerable one
    relevant0 = [True] * 8
    relevant1 = [True, True, True, False, False, False, False, False]
    settings = [({"s": 0}, relevant0), ({"s": 1}, relevant1)]
    held, chosen = SQ.cross_validate(settings, answerable, folds, SQ._choose_abstention)
    # on folds 0-2 the others include fold 3 (1 of 3 answerable wrongly abstained = 33%): setting 0;
    # for fold 3 the others are clean: setting 1, which wrongly abstains on fold 3's answerable question
    assert [c["s"] for c in chosen] == [0, 0, 0, 1]
    assert held == [True, True, True, False, True, True, True, False]
    assert SQ._abstain_score(held, answerable, list(range(8))) == (0.25, 0.25)
    # in-sample the same procedure picks setting 0 (setting 1 wrongly abstains on 25% of all)
    assert SQ._choose_abstention(settings, answerable, list(range(8))) == 0


def test_fusion_choice_prefers_recall_at_10_then_at_5() -> None:
    answerable = [True, True, True]
    settings = [({"s": 0}, [1, 11, 2]), ({"s": 1}, [9, 8, None]), ({"s": 2}, [1, 7, 9])]
    assert SQ._choose_fusion(settings, answerable, [0, 1, 2]) == 2
    assert SQ._recall([1, 7, 9], answerable, [0, 1, 2], 5) == 1 / 3
