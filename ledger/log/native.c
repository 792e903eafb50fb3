/* ledger.log.native: batch SHA-256 for the Merkle hot paths (optional accelerator).
 *
 * Python's hashlib costs an interpreter round trip per message, which for ~400-byte log
 * entries and 65-byte tree nodes is as much as the hashing itself. These functions hash a
 * whole batch per call, through the same OpenSSL SHA-256 hashlib uses, with the GIL
 * released while hashing. ledger/log/fast.py holds the pure-Python definitions they must
 * equal (tests/test_hashing.py pins them with hypothesis) and falls back to those when
 * this module was not built.
 */
#define PY_SSIZE_T_CLEAN
#define OPENSSL_SUPPRESS_DEPRECATED /* SHA256_Init & co.: no per-call EVP fetch */
#include <Python.h>
#include <openssl/sha.h>
#include <stdint.h>
#include <string.h>

#define HASH 32

/* tree_level(children) -> bytes: RFC 9162 SHA-256(0x01 || left || right) of each
 * consecutive pair of 32-byte hashes. */
static PyObject *tree_level(PyObject *self, PyObject *args) {
    Py_buffer h;
    if (!PyArg_ParseTuple(args, "y*", &h)) return NULL;
    PyObject *out = NULL;
    if (h.len % (2 * HASH)) {
        PyErr_SetString(PyExc_ValueError, "children must be pairs of 32-byte hashes");
        goto done;
    }
    Py_ssize_t k = h.len / (2 * HASH);
    out = PyBytes_FromStringAndSize(NULL, k * HASH);
    if (out) {
        unsigned char *dst = (unsigned char *)PyBytes_AS_STRING(out);
        const unsigned char *src = h.buf;
        static const unsigned char node_prefix = 0x01;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < k; i++) {
            SHA256_CTX c;
            SHA256_Init(&c);
            SHA256_Update(&c, &node_prefix, 1);
            SHA256_Update(&c, src + 2 * HASH * i, 2 * HASH);
            SHA256_Final(dst + HASH * i, &c);
        }
        Py_END_ALLOW_THREADS
    }
done:
    PyBuffer_Release(&h);
    return out;
}

/* --- leaf hashes of stored envelope rows ------------------------------------------------
 * entry = [seq,"stream",version,"event_id","type",schema_version] "\n" payload, the header
 * being orjson's encoding (schemas/envelope.py). For strings with no character JSON escapes
 * (quote, backslash, U+0000..U+001F) that is '"' + UTF-8 + '"'; a row with any other string
 * is handed back (None) and encoded in Python, so the bytes never depend on two JSON
 * encoders agreeing about escapes. */

static char *put_uint(char *w, unsigned long long v) {
    char tmp[24];
    int n = 0;
    do { tmp[n++] = (char)('0' + v % 10); v /= 10; } while (v);
    while (n) *w++ = tmp[--n];
    return w;
}

static char *put_str(char *w, const char *s, Py_ssize_t n) {
    *w++ = '"';
    memcpy(w, s, (size_t)n);
    w += n;
    *w++ = '"';
    return w;
}

/* One Arrow variable-width column: k + 1 offsets of `width` bytes (4: binary / string,
 * 8: large_binary / large_string) and the data they index, read into int64 once. */
typedef struct {
    int64_t *off;
    Py_buffer data;
} VarCol;

static int var_col(PyObject *triple, Py_ssize_t k, VarCol *c, const char *name) {
    PyObject *o, *d;
    int width;
    Py_buffer ob;
    if (!PyArg_ParseTuple(triple, "OOi", &o, &d, &width)) return 0;
    if (PyObject_GetBuffer(o, &ob, PyBUF_SIMPLE)) return 0;
    if (PyObject_GetBuffer(d, &c->data, PyBUF_SIMPLE)) { PyBuffer_Release(&ob); return 0; }
    c->off = PyMem_Malloc((size_t)(k + 1) * sizeof(int64_t));
    int ok = c->off != NULL && (width == 4 || width == 8) && ob.len == (k + 1) * width;
    for (Py_ssize_t i = 0; ok && i <= k; i++) {
        int64_t v;
        if (width == 8) { memcpy(&v, (const char *)ob.buf + 8 * i, 8); }
        else { int32_t w; memcpy(&w, (const char *)ob.buf + 4 * i, 4); v = w; }
        c->off[i] = v;
        ok = v >= 0 && v <= c->data.len && (!i || v >= c->off[i - 1]);
    }
    PyBuffer_Release(&ob);
    if (!ok) {
        PyMem_Free(c->off);
        PyBuffer_Release(&c->data);
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "column %s: offsets do not index its data", name);
    }
    return ok;
}

static int plain_bytes(const unsigned char *s, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (s[i] < 0x20 || s[i] == '"' || s[i] == '\\') return 0;
    return 1;
}

/* envelope_leaf_hashes_arrow(k, first_seq, seq, version, schema_version, stream, event_id,
 * type, payload) -> (bytes, int) | None: leaf hashes straight from stored columns (verify), and
 * the number of entry bytes hashed (without the 0x00 prefixes). The three
 * integer columns are uint64 buffers of k values; the four others (offsets, data) pairs.
 * None when the seq column is not first_seq, first_seq + 1, … or a string needs a JSON
 * escape (the caller then takes its Python path). Strings are
 * written as stored: DuckDB guarantees VARCHAR is valid UTF-8. */
static PyObject *envelope_leaf_hashes_arrow(PyObject *self, PyObject *args) {
    Py_ssize_t k;
    unsigned long long first;
    Py_buffer ints[3];
    PyObject *pairs[4];
    if (!PyArg_ParseTuple(args, "nKy*y*y*OOOO", &k, &first, &ints[0], &ints[1], &ints[2], &pairs[0],
                          &pairs[1], &pairs[2], &pairs[3]))
        return NULL;
    static const char *names[4] = {"stream", "event_id", "type", "payload"};
    VarCol cols[4];
    int ready = 0;
    PyObject *out = NULL;
    for (int i = 0; i < 3; i++)
        if (k < 0 || ints[i].len != k * 8) {
            PyErr_SetString(PyExc_ValueError, "integer columns must hold k uint64 values");
            goto done;
        }
    for (; ready < 4; ready++)
        if (!var_col(pairs[ready], k, &cols[ready], names[ready])) goto done;
    size_t longest = 0;
    const uint64_t *seq = ints[0].buf, *ver = ints[1].buf, *sv = ints[2].buf;
    for (Py_ssize_t i = 0; i < k; i++) {
        size_t need = 3 * 20 + 16;
        if (seq[i] != first + (unsigned long long)i) {
            out = Py_None;
            Py_INCREF(out);
            goto done;
        }
        for (int c = 0; c < 4; c++) {
            const int64_t *q = cols[c].off;
            need += (size_t)(q[i + 1] - q[i]);
            if (c < 3 && !plain_bytes((const unsigned char *)cols[c].data.buf + q[i], q[i + 1] - q[i])) {
                out = Py_None;
                Py_INCREF(out);
                goto done;
            }
        }
        if (need > longest) longest = need;
    }
    out = PyBytes_FromStringAndSize(NULL, k * HASH);
    char *buf = out ? PyMem_RawMalloc(longest) : NULL;
    if (!buf) {
        Py_CLEAR(out);
        PyErr_NoMemory();
        goto done;
    }
    unsigned char *dst = (unsigned char *)PyBytes_AS_STRING(out);
    long long total = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < k; i++) {
        const char *s[4];
        int64_t n[4];
        for (int c = 0; c < 4; c++) {
            const int64_t *q = cols[c].off;
            s[c] = (const char *)cols[c].data.buf + q[i];
            n[c] = q[i + 1] - q[i];
        }
        char *w = buf;
        *w++ = 0x00;
        *w++ = '[';
        w = put_uint(w, seq[i]);
        *w++ = ',';
        w = put_str(w, s[0], n[0]);
        *w++ = ',';
        w = put_uint(w, ver[i]);
        *w++ = ',';
        w = put_str(w, s[1], n[1]);
        *w++ = ',';
        w = put_str(w, s[2], n[2]);
        *w++ = ',';
        w = put_uint(w, sv[i]);
        *w++ = ']';
        *w++ = '\n';
        SHA256_CTX c;
        SHA256_Init(&c);
        SHA256_Update(&c, buf, (size_t)(w - buf));
        SHA256_Update(&c, s[3], (size_t)n[3]);
        SHA256_Final(dst + HASH * i, &c);
        total += (long long)(w - buf - 1 + n[3]);
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(buf);
    out = Py_BuildValue("(NL)", out, total);
done:
    for (int c = 0; c < ready; c++) {
        PyMem_Free(cols[c].off);
        PyBuffer_Release(&cols[c].data);
    }
    for (int i = 0; i < 3; i++) PyBuffer_Release(&ints[i]);
    return out;
}

/* --- Bloom filters over strings (append's "might the log hold this id / stream?") -------
 * bits: a writable buffer of whole 64-byte blocks; k <= 7 probes per key from two 64-bit
 * hashes of the key's UTF-8 bytes (FNV-1a, each finished with a different murmur3 fmix64).
 * A key that was added always answers "maybe": the filter only ever spares append a lookup. */

static uint64_t fmix64(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

static void key_hashes(const unsigned char *s, Py_ssize_t n, uint64_t *h1, uint64_t *h2) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (Py_ssize_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ULL;
    h ^= (uint64_t)n;
    *h1 = fmix64(h);
    *h2 = fmix64(h ^ 0x9e3779b97f4a7c15ULL) | 1;
}

static int bloom_buffer(PyObject *bits, Py_buffer *b) {
    if (PyObject_GetBuffer(bits, b, PyBUF_WRITABLE)) return 0;
    if (b->len < 64 || b->len % 64) {
        PyBuffer_Release(b);
        PyErr_SetString(PyExc_ValueError, "bloom bits must be a whole number of 64-byte blocks");
        return 0;
    }
    return 1;
}

/* op 0: add the key; op 1: 1 when every probed bit is set ("maybe present"). Blocked: h1
 * picks one 64-byte block and all k probes fall inside it, so a key costs one cache miss
 * instead of k (a 16 MiB filter is far larger than the caches). */
static int bloom_key(Py_buffer *b, const unsigned char *s, Py_ssize_t n, int k, int op) {
    uint64_t h1, h2, blocks = (uint64_t)b->len / 64;
    key_hashes(s, n, &h1, &h2);
    unsigned char *block = (unsigned char *)b->buf + 64 * (h1 % blocks);
    for (int i = 0; i < k; i++) {
        unsigned bit = (unsigned)((h2 >> (9 * i)) & 511); /* 9 bits per probe: 0..511 */
        if (op == 0) block[bit >> 3] |= (unsigned char)(1u << (bit & 7));
        else if (!(block[bit >> 3] & (1u << (bit & 7)))) return 0;
    }
    return 1;
}

/* bloom_add(bits, strs, k): add each str of the list. */
static PyObject *bloom_add(PyObject *self, PyObject *args) {
    PyObject *bits, *strs;
    int k;
    if (!PyArg_ParseTuple(args, "OO!i", &bits, &PyList_Type, &strs, &k)) return NULL;
    Py_buffer b;
    if (!bloom_buffer(bits, &b)) return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(strs); i++) {
        Py_ssize_t n;
        const char *s = PyUnicode_Check(PyList_GET_ITEM(strs, i))
                            ? PyUnicode_AsUTF8AndSize(PyList_GET_ITEM(strs, i), &n)
                            : NULL;
        if (!s) {
            PyBuffer_Release(&b);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "bloom keys must be str");
            return NULL;
        }
        bloom_key(&b, (const unsigned char *)s, n, k, 0);
    }
    PyBuffer_Release(&b);
    Py_RETURN_NONE;
}

/* bloom_add_column(bits, (offsets, data, width), rows, k): add each of the `rows` values of
 * an Arrow string column (its UTF-8 bytes: the same hash as the equal str). */
static PyObject *bloom_add_column(PyObject *self, PyObject *args) {
    PyObject *bits, *triple;
    Py_ssize_t rows;
    int k;
    if (!PyArg_ParseTuple(args, "OOni", &bits, &triple, &rows, &k)) return NULL;
    if (rows < 0) {
        PyErr_SetString(PyExc_ValueError, "rows must be >= 0");
        return NULL;
    }
    Py_buffer b;
    if (!bloom_buffer(bits, &b)) return NULL;
    VarCol col;
    if (!var_col(triple, rows, &col, "bloom")) {
        PyBuffer_Release(&b);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < rows; i++)
        bloom_key(&b, (const unsigned char *)col.data.buf + col.off[i], col.off[i + 1] - col.off[i], k, 0);
    PyMem_Free(col.off);
    PyBuffer_Release(&col.data);
    PyBuffer_Release(&b);
    Py_RETURN_NONE;
}

/* bloom_maybe(bits, strs, k) -> list[int]: indexes of the strs the filter may hold (a str
 * it cannot encode counts as "maybe": the caller then looks it up). */
static PyObject *bloom_maybe(PyObject *self, PyObject *args) {
    PyObject *bits, *strs;
    int k;
    if (!PyArg_ParseTuple(args, "OO!i", &bits, &PyList_Type, &strs, &k)) return NULL;
    Py_buffer b;
    if (!bloom_buffer(bits, &b)) return NULL;
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; out && i < PyList_GET_SIZE(strs); i++) {
        Py_ssize_t n;
        PyObject *item = PyList_GET_ITEM(strs, i);
        const char *s = PyUnicode_Check(item) ? PyUnicode_AsUTF8AndSize(item, &n) : NULL;
        if (!s) PyErr_Clear();
        if (!s || bloom_key(&b, (const unsigned char *)s, n, k, 1)) {
            PyObject *ix = PyLong_FromSsize_t(i);
            if (!ix || PyList_Append(out, ix)) Py_CLEAR(out);
            Py_XDECREF(ix);
        }
    }
    PyBuffer_Release(&b);
    return out;
}

/* split_json_array(buf, k) -> (data, offsets, with_null) | None: the k elements of a compact
 * JSON array (orjson's `[e0,e1,...]`, no whitespace) concatenated, with k + 1 int32 offsets:
 * element i is data[o[i]:o[i+1]], byte for byte what orjson writes for it alone. Splits at
 * the commas of depth 1 outside strings; strings are copied in runs between quotes.
 * with_null lists the elements holding a JSON null (an `n` outside a string can only start
 * one), where orjson may have written NaN or Infinity. None when buf is not such an array
 * of k elements or does not fit int32 offsets. */
static PyObject *split_json_array(PyObject *self, PyObject *args) {
    Py_buffer b;
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "y*n", &b, &k)) return NULL;
    const unsigned char *s = b.buf;
    Py_ssize_t n = b.len;
    PyObject *data = NULL, *offs = NULL, *nulls = NULL;
    if (k < 0 || n < 2 || s[0] != '[' || s[n - 1] != ']' || n > INT32_MAX) goto none;
    if (n == 2 ? k != 0 : k == 0) goto none;
    data = PyBytes_FromStringAndSize(NULL, n);
    offs = PyBytes_FromStringAndSize(NULL, (k + 1) * 4);
    nulls = PyList_New(0);
    if (!data || !offs || !nulls) goto fail;
    unsigned char *w = (unsigned char *)PyBytes_AS_STRING(data);
    int32_t *o = (int32_t *)PyBytes_AS_STRING(offs);
    Py_ssize_t at = 0, elem = 0, marked = -1, i = 1, end = n - 1;
    int depth = 0;
    o[0] = 0;
    while (i < end) {
        unsigned char c = s[i];
        if (c == '"') { /* copy the whole string: find its unescaped closing quote */
            Py_ssize_t j = i + 1;
            const unsigned char *q;
            for (;;) {
                q = memchr(s + j, '"', (size_t)(end - j));
                if (!q) goto none;
                Py_ssize_t back = 0;
                while (q - 1 - back > s + i && q[-1 - back] == '\\') back++;
                if (!(back & 1)) break;
                j = (q - s) + 1;
            }
            Py_ssize_t len = (q - s) - i + 1;
            memcpy(w + at, s + i, (size_t)len);
            at += len;
            i += len;
            continue;
        }
        if (c == '{' || c == '[') depth++;
        else if (c == '}' || c == ']') { if (--depth < 0) goto none; }
        else if (c == ',' && depth == 0) {
            if (++elem >= k) goto none;
            o[elem] = (int32_t)at;
            i++;
            continue;
        } else if (c == 'n' && marked != elem) {
            PyObject *ix = PyLong_FromSsize_t(elem);
            if (!ix || PyList_Append(nulls, ix)) { Py_XDECREF(ix); goto fail; }
            Py_DECREF(ix);
            marked = elem;
        }
        w[at++] = c;
        i++;
    }
    if (depth || (k && elem != k - 1)) goto none;
    o[k] = (int32_t)at;
    if (_PyBytes_Resize(&data, at)) { data = NULL; goto fail; }
    PyBuffer_Release(&b);
    return Py_BuildValue("(NNN)", data, offs, nulls);
none:
    Py_XDECREF(data);
    Py_XDECREF(offs);
    Py_XDECREF(nulls);
    PyBuffer_Release(&b);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(data);
    Py_XDECREF(offs);
    Py_XDECREF(nulls);
    PyBuffer_Release(&b);
    return NULL;
}

static PyMethodDef methods[] = {
    {"tree_level", tree_level, METH_VARARGS, "RFC 9162 node hash of each pair"},
    {"split_json_array", split_json_array, METH_VARARGS, "elements of a compact JSON array"},
    {"bloom_add", bloom_add, METH_VARARGS, "add strs to a Bloom filter"},
    {"bloom_add_column", bloom_add_column, METH_VARARGS, "add an Arrow string column"},
    {"bloom_maybe", bloom_maybe, METH_VARARGS, "indexes of strs the filter may hold"},
    {"envelope_leaf_hashes_arrow", envelope_leaf_hashes_arrow, METH_VARARGS,
     "leaf hashes from stored Arrow columns, or None when Python must encode"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "ledger.log.native", NULL, -1, methods};

PyMODINIT_FUNC PyInit_native(void) { return PyModule_Create(&module); }
