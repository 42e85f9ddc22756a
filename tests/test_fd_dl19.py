"""FD@k on TREC DL 2019 with MiniLM (int8 ONNX): the system ranking of seed 000, section 5."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from qrelkit.embed import embed_with_cache, load_text_embedder
from qrelkit.evaluate.fd.runs import FDSettings, fd_of_runs, selected_docids
from qrelkit.io import list_run_files, read_documents, read_qrels, read_runs
from qrelkit.storage import Store

pytest.importorskip("onnxruntime")


@pytest.mark.slow
@pytest.mark.shared
def test_fd_at_10_with_one_relevant_per_query_ranks_dl19_runs_like_ndcg(dl19, request):
    qrels = read_qrels(dl19 / "qrels.txt")
    runs = read_runs(list_run_files([dl19 / "runs"]))
    settings = FDSettings(ks=(1, 10), max_rel=1, seed=0)
    needed = set().union(*selected_docids(qrels, runs, settings).values())  # ~2,400 passages, not all 9,139
    documents = {d.docid: d.text for d in read_documents(dl19 / "passages.jsonl") if d.docid in needed}
    # vectors persist in pytest's cache folder (.pytest_cache): ~1 min to embed on 2 cores, once
    with Store(request.config.cache.mkdir("qrelkit-embeddings") / "dl19.duckdb") as store:
        vectors = embed_with_cache(store, load_text_embedder("minilm", "onnx"), "document", documents)
    report = fd_of_runs(qrels, runs, vectors, settings)

    assert report.n_rel == 43 and report.d == 384 and len(report.qids) == 43
    at1 = report.runs["idst_bert_p1"]["FD@1"].result
    assert (at1.n1, at1.n2, at1.rank1, at1.rank2) == (43, 43, 42, 42) and at1.rank_deficient  # n < d, still finite
    nist = json.loads((dl19 / "official-nist.json").read_text())
    ndcg = [nist[run.name]["ndcg_cut_10"] for run in runs]
    fd10 = [report.runs[run.name]["FD@10"].value for run in runs]
    fd1 = [report.runs[run.name]["FD@1"].value for run in runs]
    assert all(np.isfinite(fd10)) and min(fd10) > 0
    # seed 000: τ = -0.836 on DL19 (DistilBERT, m = 1); MiniLM with sparsification seed 0 gives -0.788
    assert stats.kendalltau(fd10, ndcg).statistic == pytest.approx(-0.788, abs=0.02)
    assert stats.kendalltau(fd1, ndcg).statistic < -0.6
