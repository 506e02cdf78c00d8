"""kps's sparse and graph ops on NumPy arrays (the CPU kernels; on CUDA with torch tensors when a GPU
is present) against scipy.sparse and networkx: spmv, spmm, coo_to_csr, csr_transpose, the
generators, graph_from_edges, graph_orient and triangle_count (networkx's karate club and Les
Miserables graphs, and random graphs)."""

import numpy as np
import pytest

import kps

nx = pytest.importorskip("networkx")
try:
    import scipy.sparse as sp
except ImportError:  # the GPU machine's Python has no SciPy: the CUDA test needs none
    sp = None


@pytest.fixture
def scipy_sparse():
    if sp is None:
        pytest.skip("scipy is not installed")
    return sp


@pytest.fixture
def rng():
    seed = np.random.SeedSequence().entropy % (2**32)
    print("seed", seed)  # shown when a test fails
    return np.random.default_rng(seed)


def random_csr(rng, m, n, density, dtype=np.float32):
    a = sp.random(m, n, density=density, format="csr", dtype=np.float64, random_state=rng)
    a.data = (a.data * 4 - 2).astype(dtype)
    return a


def test_spmv_against_scipy(rng, scipy_sparse):
    for m, n, density in [(1, 1, 1.0), (300, 200, 0.05), (1000, 7, 0.3), (5, 4000, 0.2)]:
        a = random_csr(rng, m, n, density)
        x = (rng.random(n) * 2 - 1).astype(np.float32)
        out = kps.ops.spmv(a.indptr.astype(np.int64), a.indices, a.data, x)
        np.testing.assert_allclose(out, a @ x, rtol=1e-5, atol=1e-5)


def test_spmm_against_scipy(rng, scipy_sparse):
    if "spmm" not in kps.list_ops():
        pytest.skip("spmm is not registered in this build")
    for k in [1, 3, 32, 65]:
        a = random_csr(rng, 200, 150, 0.05, np.float64)
        b = rng.random((150, k))
        out = kps.ops.spmm(a.indptr, a.indices, a.data, b)
        np.testing.assert_allclose(out, a @ b, rtol=1e-12, atol=1e-12)


def test_coo_to_csr_sums_duplicates_like_scipy(rng, scipy_sparse):
    m, n, count = 70, 90, 2000
    rows = rng.integers(0, m, count).astype(np.int32)
    cols = rng.integers(0, n, count).astype(np.int32)
    vals = rng.random(count)
    indptr, indices, values = kps.ops.coo_to_csr(rows, cols, vals, num_rows=m, num_cols=n)
    want = sp.coo_matrix((vals, (rows, cols)), shape=(m, n)).tocsr()
    want.sum_duplicates()
    want.sort_indices()
    np.testing.assert_array_equal(indptr, want.indptr)
    np.testing.assert_array_equal(indices, want.indices)
    np.testing.assert_allclose(values, want.data, rtol=1e-12)
    with pytest.raises(ValueError, match="input 'rows' has 70 at 0"):
        kps.ops.coo_to_csr(np.array([70], np.int32), np.array([0], np.int32), None, num_rows=m, num_cols=n)


def test_csr_transpose_like_scipy(rng, scipy_sparse):
    a = random_csr(rng, 120, 80, 0.1)
    indptr_t, indices_t, values_t = kps.ops.csr_transpose(a.indptr, a.indices, a.data, num_cols=80)
    want = a.T.tocsr()
    want.sort_indices()
    np.testing.assert_array_equal(indptr_t, want.indptr)
    np.testing.assert_array_equal(indices_t, want.indices)
    np.testing.assert_array_equal(values_t, want.data)


def test_generators_against_scipy(scipy_sparse):
    # A 2-D 5-point Laplacian is the Kronecker sum of two 1-D second differences.
    indptr, indices, values = kps.ops.stencil_csr(grid=[6, 9], points=5, dtype="float64")
    d = lambda k: sp.diags([-np.ones(k - 1), 2 * np.ones(k), -np.ones(k - 1)], [-1, 0, 1])
    want = sp.kronsum(d(9), d(6)).tocsr()  # kronsum(A, B) = A (x) I + I (x) B: the last dim varies fastest
    want.sort_indices()
    got = sp.csr_matrix((np.asarray(values), np.asarray(indices), np.asarray(indptr)), shape=want.shape)
    # Boundary rows have fewer neighbours: the Laplacian's diagonal counts the neighbours present.
    diag = -np.asarray(want.sum(axis=1)).ravel() + want.diagonal()
    want.setdiag(diag)
    np.testing.assert_array_equal(got.toarray(), want.toarray())
    indptr, indices, values = kps.ops.banded_csr(n=50, lower=2, upper=3, dtype="float64")
    got = sp.csr_matrix((np.asarray(values), np.asarray(indices), np.asarray(indptr)), shape=(50, 50)).toarray()
    assert np.count_nonzero(np.triu(got, 4)) == 0 and np.count_nonzero(np.tril(got, -3)) == 0
    src, dst = kps.ops.rmat(scale=8, edge_factor=4, seed=3)
    src, dst = np.asarray(src), np.asarray(dst)
    assert src.shape == (1024,) and src.min() >= 0 and dst.max() < 256
    src2, _ = kps.ops.rmat(scale=8, edge_factor=4, seed=3)
    np.testing.assert_array_equal(np.asarray(src2), src)  # seeded: the same edges


def networkx_graph_csr(g):
    g = nx.convert_node_labels_to_integers(g)
    a = nx.to_scipy_sparse_array(g, format="csr", dtype=np.float64)
    a.setdiag(0)
    a.eliminate_zeros()
    a.sort_indices()
    return g, a


@pytest.mark.parametrize("name", ["karate", "les_miserables", "florentine", "random"])
def test_triangle_count_against_networkx(name, rng, scipy_sparse):
    g = {
        "karate": nx.karate_club_graph,
        "les_miserables": nx.les_miserables_graph,
        "florentine": nx.florentine_families_graph,
        "random": lambda: nx.gnp_random_graph(400, 0.05, seed=int(rng.integers(1 << 30))),
    }[name]()
    g, a = networkx_graph_csr(g)
    want = nx.triangles(g)
    per_vertex = np.array([want[v] for v in range(g.number_of_nodes())])
    total = kps.ops.triangle_count(a.indptr, a.indices.astype(np.int32))
    assert int(np.asarray(total)) == per_vertex.sum() // 3
    if name == "karate":
        assert per_vertex.sum() // 3 == 45
    if name == "les_miserables":
        assert per_vertex.sum() // 3 == 467
    got = kps.ops.triangle_count(a.indptr, a.indices, per_vertex=True)
    np.testing.assert_array_equal(got, per_vertex)
    # The pipeline: edges -> simple symmetric CSR -> oriented -> count.
    src, dst = (np.array(e, np.int64) for e in zip(*g.edges()))
    indptr, indices = kps.ops.graph_from_edges(src, dst, num_vertices=g.number_of_nodes())
    np.testing.assert_array_equal(indptr, a.indptr)
    np.testing.assert_array_equal(indices, a.indices)
    dag_ptr, dag_idx = kps.ops.graph_orient(indptr, indices)
    assert len(dag_idx) == g.number_of_edges()
    assert int(np.asarray(kps.ops.triangle_count(dag_ptr, dag_idx, oriented=True))) == per_vertex.sum() // 3


def test_triangle_count_on_cuda_matches_the_cpu(rng):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    src, dst = kps.ops.rmat(scale=14, seed=int(rng.integers(1 << 30)), device="cuda")
    src, dst = torch.from_dlpack(src), torch.from_dlpack(dst)
    indptr, indices = kps.ops.graph_from_edges(src, dst, num_vertices=1 << 14)
    dag_ptr, dag_idx = kps.ops.graph_orient(indptr, indices)
    gpu = kps.ops.triangle_count(dag_ptr, dag_idx, oriented=True)
    cpu = kps.ops.triangle_count(dag_ptr.cpu().numpy(), dag_idx.cpu().numpy(), oriented=True)
    assert int(gpu) == int(np.asarray(cpu))
    g = nx.Graph()
    g.add_edges_from(zip(src.cpu().numpy().tolist(), dst.cpu().numpy().tolist()))
    g.remove_edges_from(nx.selfloop_edges(g))
    assert int(gpu) == sum(nx.triangles(g).values()) // 3
