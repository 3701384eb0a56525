//! A small pure-Rust ONNX runtime: reads an ONNX `ModelProto` (protobuf) and evaluates its
//! graph on CPU in `f32`. It supports the operators a recurrent MLP policy exports to — Gemm,
//! MatMul, Add, Sub, Mul, Relu, LeakyRelu, Sigmoid, Tanh, Identity, Constant, Reshape, Squeeze,
//! Unsqueeze, Flatten, Concat and GRU (forward, default activations) — and rejects anything else
//! with an error naming the operator, so a model is either run exactly or not at all.
//!
//! Why not a general runtime: tract-onnx would pull in ~100 crates (protobuf code generation,
//! ndarray, linear-algebra kernels) into every build of the core on a 2-core machine, for a
//! model of ~30k weights; the evaluation here is ~300 lines and runs one R3Net step in a few
//! microseconds. Parity with onnxruntime is tested from Python (`tests/python/test_rl_*`).

use std::collections::HashMap;
use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub struct OnnxError(pub String);
impl fmt::Display for OnnxError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { write!(f, "{}", self.0) }
}
impl std::error::Error for OnnxError {}
fn err<T>(m: impl Into<String>) -> Result<T, OnnxError> { Err(OnnxError(m.into())) }

// ---------------------------------------------------------------------------------------------
// Protobuf wire format (just what ONNX needs).

struct Reader<'a> { b: &'a [u8], pos: usize }

/// One protobuf field value (64-bit fixed fields are skipped by every ONNX message read here).
enum Field<'a> { Varint(u64), Fixed64, Bytes(&'a [u8]), Fixed32(u32) }

impl<'a> Reader<'a> {
    fn new(b: &'a [u8]) -> Self { Reader { b, pos: 0 } }
    fn varint(&mut self) -> Result<u64, OnnxError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&byte) = self.b.get(self.pos) else { return err("truncated varint") };
            self.pos += 1;
            v |= ((byte & 0x7f) as u64) << shift;
            if byte & 0x80 == 0 { return Ok(v); }
        }
        err("varint too long")
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], OnnxError> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.b.len()).ok_or_else(|| OnnxError("truncated field".into()))?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    /// Next (field number, value), or None at the end.
    fn next(&mut self) -> Result<Option<(u64, Field<'a>)>, OnnxError> {
        if self.pos >= self.b.len() { return Ok(None); }
        let key = self.varint()?;
        let v = match key & 7 {
            0 => Field::Varint(self.varint()?),
            1 => { self.take(8)?; Field::Fixed64 }
            2 => { let n = self.varint()? as usize; Field::Bytes(self.take(n)?) }
            5 => Field::Fixed32(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes"))),
            w => return err(format!("unsupported protobuf wire type {w}")),
        };
        Ok(Some((key >> 3, v)))
    }
}

fn as_str(b: &[u8]) -> Result<String, OnnxError> { String::from_utf8(b.to_vec()).map_err(|_| OnnxError("invalid UTF-8 string".into())) }

/// Repeated int64: packed (bytes) or one varint.
fn push_ints(f: Field, out: &mut Vec<i64>) -> Result<(), OnnxError> {
    match f {
        Field::Varint(v) => out.push(v as i64),
        Field::Bytes(b) => { let mut r = Reader::new(b); while r.pos < b.len() { out.push(r.varint()? as i64); } }
        _ => return err("bad int field"),
    }
    Ok(())
}

fn push_floats(f: Field, out: &mut Vec<f32>) -> Result<(), OnnxError> {
    match f {
        Field::Fixed32(v) => out.push(f32::from_bits(v)),
        Field::Bytes(b) => {
            if b.len() % 4 != 0 { return err("packed floats not a multiple of 4 bytes"); }
            out.extend(b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes"))));
        }
        _ => return err("bad float field"),
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Tensors.

#[derive(Clone, Debug, PartialEq)]
pub enum Data { F32(Vec<f32>), I64(Vec<i64>) }

#[derive(Clone, Debug, PartialEq)]
pub struct Tensor { pub shape: Vec<usize>, pub data: Data }

impl Tensor {
    pub fn f32(shape: Vec<usize>, v: Vec<f32>) -> Tensor { Tensor { shape, data: Data::F32(v) } }
    fn len(&self) -> usize { self.shape.iter().product() }
    fn floats(&self) -> Result<&[f32], OnnxError> { match &self.data { Data::F32(v) => Ok(v), Data::I64(_) => err("expected a float tensor") } }
    fn ints(&self) -> Result<Vec<i64>, OnnxError> {
        match &self.data { Data::I64(v) => Ok(v.clone()), Data::F32(v) => Ok(v.iter().map(|x| *x as i64).collect()) }
    }
    pub fn into_floats(self) -> Result<Vec<f32>, OnnxError> { match self.data { Data::F32(v) => Ok(v), Data::I64(_) => err("expected a float tensor") } }
}

fn parse_tensor(b: &[u8]) -> Result<(String, Tensor), OnnxError> {
    let mut r = Reader::new(b);
    let (mut dims, mut dtype, mut name, mut raw, mut fl, mut il) = (Vec::new(), 1i64, String::new(), None, Vec::new(), Vec::new());
    while let Some((n, f)) = r.next()? {
        match (n, f) {
            (1, f) => push_ints(f, &mut dims)?,
            (2, Field::Varint(v)) => dtype = v as i64,
            (4, f) => push_floats(f, &mut fl)?,
            (7, f) => push_ints(f, &mut il)?,
            (8, Field::Bytes(s)) => name = as_str(s)?,
            (9, Field::Bytes(s)) => raw = Some(s),
            _ => {}
        }
    }
    if dims.iter().any(|d| *d < 0) { return err(format!("tensor '{name}' has a negative dimension")); }
    let shape: Vec<usize> = dims.iter().map(|d| *d as usize).collect();
    let n: usize = shape.iter().product();
    let data = match dtype {
        1 => {
            let v = match raw {
                Some(b) if b.len() == 4 * n => b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes"))).collect(),
                Some(_) => return err(format!("tensor '{name}': raw data size does not match its shape")),
                None => fl,
            };
            Data::F32(v)
        }
        7 => {
            let v = match raw {
                Some(b) if b.len() == 8 * n => b.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes"))).collect(),
                Some(_) => return err(format!("tensor '{name}': raw data size does not match its shape")),
                None => il,
            };
            Data::I64(v)
        }
        t => return err(format!("tensor '{name}': unsupported data type {t} (float32 and int64 only)")),
    };
    let t = Tensor { shape, data };
    let len = match &t.data { Data::F32(v) => v.len(), Data::I64(v) => v.len() };
    if len != n { return err(format!("tensor '{name}': {len} values for shape {:?}", t.shape)); }
    Ok((name, t))
}

#[derive(Clone, Debug, Default)]
struct Attr { f: Option<f32>, i: Option<i64>, s: Option<String>, ints: Vec<i64>, floats: Vec<f32>, strings: Vec<String>, t: Option<Tensor> }

#[derive(Clone, Debug)]
struct Node { op: String, inputs: Vec<String>, outputs: Vec<String>, attrs: HashMap<String, Attr> }

impl Node {
    fn f(&self, k: &str, d: f32) -> f32 { self.attrs.get(k).and_then(|a| a.f).unwrap_or(d) }
    fn i(&self, k: &str, d: i64) -> i64 { self.attrs.get(k).and_then(|a| a.i).unwrap_or(d) }
}

fn parse_attr(b: &[u8]) -> Result<(String, Attr), OnnxError> {
    let mut r = Reader::new(b);
    let (mut name, mut a) = (String::new(), Attr::default());
    while let Some((n, f)) = r.next()? {
        match (n, f) {
            (1, Field::Bytes(s)) => name = as_str(s)?,
            (2, Field::Fixed32(v)) => a.f = Some(f32::from_bits(v)),
            (3, Field::Varint(v)) => a.i = Some(v as i64),
            (4, Field::Bytes(s)) => a.s = Some(as_str(s)?),
            (5, Field::Bytes(s)) => a.t = Some(parse_tensor(s)?.1),
            (7, f) => push_floats(f, &mut a.floats)?,
            (8, f) => push_ints(f, &mut a.ints)?,
            (9, Field::Bytes(s)) => a.strings.push(as_str(s)?),
            _ => {}
        }
    }
    Ok((name, a))
}

fn parse_node(b: &[u8]) -> Result<Node, OnnxError> {
    let mut r = Reader::new(b);
    let mut node = Node { op: String::new(), inputs: Vec::new(), outputs: Vec::new(), attrs: HashMap::new() };
    let mut domain = String::new();
    while let Some((n, f)) = r.next()? {
        match (n, f) {
            (1, Field::Bytes(s)) => node.inputs.push(as_str(s)?),
            (2, Field::Bytes(s)) => node.outputs.push(as_str(s)?),
            (4, Field::Bytes(s)) => node.op = as_str(s)?,
            (5, Field::Bytes(s)) => { let (k, a) = parse_attr(s)?; node.attrs.insert(k, a); }
            (7, Field::Bytes(s)) => domain = as_str(s)?,
            _ => {}
        }
    }
    if !(domain.is_empty() || domain == "ai.onnx") { return err(format!("operator {}::{} is not supported", domain, node.op)); }
    Ok(node)
}

/// Name of a graph input/output (ValueInfoProto) and its static dimensions (None when symbolic).
fn parse_value_info(b: &[u8]) -> Result<(String, Vec<Option<usize>>), OnnxError> {
    let mut r = Reader::new(b);
    let (mut name, mut dims) = (String::new(), Vec::new());
    while let Some((n, f)) = r.next()? {
        match (n, f) {
            (1, Field::Bytes(s)) => name = as_str(s)?,
            (2, Field::Bytes(tp)) => {
                // TypeProto.tensor_type(1).shape(2).dim(1).dim_value(1)
                let mut r1 = Reader::new(tp);
                while let Some((1, Field::Bytes(tt))) = r1.next()? {
                    let mut r2 = Reader::new(tt);
                    while let Some((n2, f2)) = r2.next()? {
                        let (2, Field::Bytes(sh)) = (n2, f2) else { continue };
                        let mut r3 = Reader::new(sh);
                        while let Some((1, Field::Bytes(dim))) = r3.next()? {
                            let mut r4 = Reader::new(dim);
                            let mut v = None;
                            while let Some((n4, f4)) = r4.next()? { if let (1, Field::Varint(x)) = (n4, f4) { v = Some(x as usize); } }
                            dims.push(v);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok((name, dims))
}

// ---------------------------------------------------------------------------------------------
// The model.

/// A parsed ONNX model ready to run.
#[derive(Clone, Debug)]
pub struct OnnxModel {
    nodes: Vec<Node>,
    initializers: HashMap<String, Tensor>,
    /// Graph inputs that are not initializers, with their declared dimensions.
    pub inputs: Vec<(String, Vec<Option<usize>>)>,
    pub outputs: Vec<(String, Vec<Option<usize>>)>,
    pub opset: i64,
    /// The model's `metadata_props` (ModelProto field 14: key/value strings), in file order.
    pub metadata: Vec<(String, String)>,
}

const SUPPORTED: &[&str] = &["Gemm", "MatMul", "Add", "Sub", "Mul", "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Identity", "Constant", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Concat", "GRU"];

impl OnnxModel {
    /// The value of metadata key `key` (the last one when repeated).
    pub fn metadata(&self, key: &str) -> Option<&str> { self.metadata.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str()) }

    pub fn parse(bytes: &[u8]) -> Result<OnnxModel, OnnxError> {
        let mut r = Reader::new(bytes);
        let mut graph = None;
        let mut opset = 0;
        let mut metadata = Vec::new();
        while let Some((n, f)) = r.next()? {
            match (n, f) {
                (7, Field::Bytes(g)) => graph = Some(g),
                (14, Field::Bytes(e)) => {
                    // StringStringEntryProto: key = 1, value = 2.
                    let mut re = Reader::new(e);
                    let (mut k, mut v) = (String::new(), String::new());
                    while let Some((n, f)) = re.next()? {
                        match (n, f) { (1, Field::Bytes(s)) => k = as_str(s)?, (2, Field::Bytes(s)) => v = as_str(s)?, _ => {} }
                    }
                    metadata.push((k, v));
                }
                (8, Field::Bytes(o)) => {
                    let mut ro = Reader::new(o);
                    let (mut domain, mut version) = (String::new(), 0);
                    while let Some((n, f)) = ro.next()? {
                        match (n, f) { (1, Field::Bytes(s)) => domain = as_str(s)?, (2, Field::Varint(v)) => version = v as i64, _ => {} }
                    }
                    if domain.is_empty() || domain == "ai.onnx" { opset = version; }
                }
                _ => {}
            }
        }
        let Some(g) = graph else { return err("not an ONNX model (no graph)") };
        let mut m = OnnxModel { nodes: Vec::new(), initializers: HashMap::new(), inputs: Vec::new(), outputs: Vec::new(), opset, metadata };
        let mut r = Reader::new(g);
        while let Some((n, f)) = r.next()? {
            match (n, f) {
                (1, Field::Bytes(b)) => m.nodes.push(parse_node(b)?),
                (5, Field::Bytes(b)) => { let (k, t) = parse_tensor(b)?; m.initializers.insert(k, t); }
                (11, Field::Bytes(b)) => m.inputs.push(parse_value_info(b)?),
                (12, Field::Bytes(b)) => m.outputs.push(parse_value_info(b)?),
                _ => {}
            }
        }
        m.inputs.retain(|(k, _)| !m.initializers.contains_key(k));
        for nd in &m.nodes {
            if !SUPPORTED.contains(&nd.op.as_str()) { return err(format!("ONNX operator '{}' is not supported by ratelab's runtime", nd.op)); }
        }
        if m.outputs.is_empty() { return err("the graph has no outputs"); }
        // Every node input must be produced before it is used (ONNX requires topological order).
        let mut known: std::collections::HashSet<&str> = m.initializers.keys().map(|s| s.as_str()).chain(m.inputs.iter().map(|(k, _)| k.as_str())).collect();
        known.insert("");
        for nd in &m.nodes {
            for i in &nd.inputs { if !known.contains(i.as_str()) { return err(format!("node {} uses '{i}' before it is defined", nd.op)); } }
            for o in &nd.outputs { known.insert(o.as_str()); }
        }
        for (o, _) in &m.outputs { if !known.contains(o.as_str()) { return err(format!("graph output '{o}' is never computed")); } }
        Ok(m)
    }

    pub fn initializer(&self, name: &str) -> Option<&Tensor> { self.initializers.get(name) }

    /// Evaluate the graph on the given inputs (in graph-input order); returns the outputs in order.
    pub fn run(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>, OnnxError> {
        if inputs.len() != self.inputs.len() { return err(format!("model takes {} inputs, got {}", self.inputs.len(), inputs.len())); }
        let mut env: HashMap<&str, Tensor> = HashMap::with_capacity(self.nodes.len() + inputs.len());
        for ((name, dims), t) in self.inputs.iter().zip(inputs) {
            let n = match &t.data { Data::F32(v) => v.len(), Data::I64(v) => v.len() };
            if n != t.len() { return err(format!("input '{name}': {n} values for shape {:?}", t.shape)); }
            if dims.len() != t.shape.len() || dims.iter().zip(&t.shape).any(|(d, s)| d.is_some_and(|d| d != *s)) {
                return err(format!("input '{name}' has shape {:?}, the model declares {:?}", t.shape, dims));
            }
            env.insert(name.as_str(), t.clone());
        }
        for nd in &self.nodes {
            let get = |i: usize| -> Option<&Tensor> {
                let k = nd.inputs.get(i)?;
                if k.is_empty() { return None; }
                env.get(k.as_str()).or_else(|| self.initializers.get(k))
            };
            let need = |i: usize| get(i).ok_or_else(|| OnnxError(format!("{}: missing input {i}", nd.op)));
            let outs: Vec<Tensor> = match nd.op.as_str() {
                "Identity" => vec![need(0)?.clone()],
                "Constant" => vec![nd.attrs.get("value").and_then(|a| a.t.clone()).ok_or_else(|| OnnxError("Constant without a tensor value".into()))?],
                "Relu" => vec![map(need(0)?, |x| x.max(0.0))?],
                "LeakyRelu" => { let a = nd.f("alpha", 0.01); vec![map(need(0)?, |x| if x >= 0.0 { x } else { a * x })?] }
                "Sigmoid" => vec![map(need(0)?, sigmoid)?],
                "Tanh" => vec![map(need(0)?, f32::tanh)?],
                "Add" => vec![broadcast(need(0)?, need(1)?, |a, b| a + b)?],
                "Sub" => vec![broadcast(need(0)?, need(1)?, |a, b| a - b)?],
                "Mul" => vec![broadcast(need(0)?, need(1)?, |a, b| a * b)?],
                "MatMul" => vec![gemm(need(0)?, need(1)?, None, 1.0, 1.0, false, false)?],
                "Gemm" => vec![gemm(need(0)?, need(1)?, get(2), nd.f("alpha", 1.0), nd.f("beta", 1.0), nd.i("transA", 0) != 0, nd.i("transB", 0) != 0)?],
                "Reshape" => vec![reshape(need(0)?, &need(1)?.ints()?)?],
                "Flatten" => {
                    let x = need(0)?;
                    let axis = norm_axis(nd.i("axis", 1), x.shape.len() + 1)?;
                    let a: usize = x.shape[..axis].iter().product();
                    vec![Tensor { shape: vec![a, x.len() / a.max(1)], data: x.data.clone() }]
                }
                "Squeeze" | "Unsqueeze" => {
                    let x = need(0)?;
                    let axes = match get(1) { Some(t) => t.ints()?, None => nd.attrs.get("axes").map(|a| a.ints.clone()).unwrap_or_default() };
                    vec![if nd.op == "Squeeze" { squeeze(x, &axes)? } else { unsqueeze(x, &axes)? }]
                }
                "Concat" => {
                    let ts: Vec<&Tensor> = (0..nd.inputs.len()).map(need).collect::<Result<_, _>>()?;
                    vec![concat(&ts, nd.i("axis", 0))?]
                }
                "GRU" => gru(nd, need(0)?, need(1)?, need(2)?, get(3), get(5))?,
                op => return err(format!("ONNX operator '{op}' is not supported")),
            };
            for (name, t) in nd.outputs.iter().zip(outs) { if !name.is_empty() { env.insert(name.as_str(), t); } }
        }
        self.outputs.iter().map(|(k, _)| env.remove(k.as_str()).ok_or_else(|| OnnxError(format!("output '{k}' was not computed")))).collect()
    }
}

fn sigmoid(x: f32) -> f32 { 1.0 / (1.0 + (-x).exp()) }

/// Dot product with 8 independent accumulators (lets the compiler vectorise; the summation order
/// differs from a sequential loop by float rounding only).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (ca, cb) = (a[..n].chunks_exact(8), b[..n].chunks_exact(8));
    let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x * y).sum();
    let mut acc = [0f32; 8];
    for (x, y) in ca.zip(cb) {
        for i in 0..8 { acc[i] += x[i] * y[i]; }
    }
    acc.iter().sum::<f32>() + tail
}

fn map(x: &Tensor, f: impl Fn(f32) -> f32) -> Result<Tensor, OnnxError> {
    Ok(Tensor::f32(x.shape.clone(), x.floats()?.iter().map(|v| f(*v)).collect()))
}

fn norm_axis(a: i64, rank: usize) -> Result<usize, OnnxError> {
    let r = rank as i64;
    let v = if a < 0 { a + r } else { a };
    if !(0..r).contains(&v) { return err(format!("axis {a} out of range for rank {rank}")); }
    Ok(v as usize)
}

/// Elementwise op with numpy broadcasting.
fn broadcast(a: &Tensor, b: &Tensor, f: impl Fn(f32, f32) -> f32) -> Result<Tensor, OnnxError> {
    let (x, y) = (a.floats()?, b.floats()?);
    if a.shape == b.shape { return Ok(Tensor::f32(a.shape.clone(), x.iter().zip(y).map(|(p, q)| f(*p, *q)).collect())); }
    let rank = a.shape.len().max(b.shape.len());
    let pad = |s: &[usize]| -> Vec<usize> { let mut v = vec![1; rank - s.len()]; v.extend_from_slice(s); v };
    let (sa, sb) = (pad(&a.shape), pad(&b.shape));
    let mut shape = Vec::with_capacity(rank);
    for (p, q) in sa.iter().zip(&sb) {
        if p != q && *p != 1 && *q != 1 { return err(format!("shapes {:?} and {:?} do not broadcast", a.shape, b.shape)); }
        shape.push(*p.max(q));
    }
    let strides = |s: &[usize]| -> Vec<usize> {
        let mut st = vec![0; rank];
        let mut acc = 1;
        for i in (0..rank).rev() { st[i] = if s[i] == 1 { 0 } else { acc }; acc *= s[i]; }
        st
    };
    let (ta, tb) = (strides(&sa), strides(&sb));
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0usize; rank];
    for _ in 0..n {
        let (mut ia, mut ib) = (0, 0);
        for d in 0..rank { ia += idx[d] * ta[d]; ib += idx[d] * tb[d]; }
        out.push(f(x[ia], y[ib]));
        for d in (0..rank).rev() { idx[d] += 1; if idx[d] < shape[d] { break; } idx[d] = 0; }
    }
    Ok(Tensor::f32(shape, out))
}

/// `alpha · op(A) · op(B) + beta · C` for 2-D A and B; C broadcasts to the result.
fn gemm(a: &Tensor, b: &Tensor, c: Option<&Tensor>, alpha: f32, beta: f32, ta: bool, tb: bool) -> Result<Tensor, OnnxError> {
    if a.shape.len() != 2 || b.shape.len() != 2 { return err(format!("Gemm/MatMul supports 2-D inputs only, got {:?} × {:?}", a.shape, b.shape)); }
    let (m, k) = if ta { (a.shape[1], a.shape[0]) } else { (a.shape[0], a.shape[1]) };
    let (k2, n) = if tb { (b.shape[1], b.shape[0]) } else { (b.shape[0], b.shape[1]) };
    if k != k2 { return err(format!("Gemm: inner dimensions differ ({k} vs {k2})")); }
    let (x, w) = (a.floats()?, b.floats()?);
    let mut out = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            out[i * n + j] = alpha * if !ta && tb {
                // The Linear-layer case: a row of A against a row of B.
                dot(&x[i * k..(i + 1) * k], &w[j * k..(j + 1) * k])
            } else {
                (0..k).map(|p| (if ta { x[p * m + i] } else { x[i * k + p] }) * (if tb { w[j * k + p] } else { w[p * n + j] })).sum::<f32>()
            };
        }
    }
    let y = Tensor::f32(vec![m, n], out);
    match c {
        Some(c) if beta != 0.0 => broadcast(&y, c, |p, q| p + beta * q),
        _ => Ok(y),
    }
}

fn reshape(x: &Tensor, target: &[i64]) -> Result<Tensor, OnnxError> {
    let n = x.len();
    let mut shape = Vec::with_capacity(target.len());
    let mut infer = None;
    for (i, d) in target.iter().enumerate() {
        match *d {
            0 => shape.push(*x.shape.get(i).ok_or_else(|| OnnxError("Reshape: 0 refers to a missing dimension".into()))?),
            -1 if infer.is_none() => { infer = Some(i); shape.push(1); }
            d if d > 0 => shape.push(d as usize),
            d => return err(format!("Reshape: invalid dimension {d}")),
        }
    }
    let known: usize = shape.iter().product();
    if let Some(i) = infer { if known == 0 || !n.is_multiple_of(known) { return err("Reshape: cannot infer -1"); } shape[i] = n / known; }
    if shape.iter().product::<usize>() != n { return err(format!("Reshape: {:?} → {:?} changes the element count", x.shape, target)); }
    Ok(Tensor { shape, data: x.data.clone() })
}

fn squeeze(x: &Tensor, axes: &[i64]) -> Result<Tensor, OnnxError> {
    let r = x.shape.len();
    let ax: Vec<usize> = axes.iter().map(|a| norm_axis(*a, r)).collect::<Result<_, _>>()?;
    let shape = x.shape.iter().enumerate().filter(|(i, d)| if ax.is_empty() { **d != 1 } else { !ax.contains(i) }).map(|(_, d)| *d).collect();
    if ax.iter().any(|a| x.shape[*a] != 1) { return err("Squeeze: axis is not of size 1"); }
    Ok(Tensor { shape, data: x.data.clone() })
}

fn unsqueeze(x: &Tensor, axes: &[i64]) -> Result<Tensor, OnnxError> {
    let r = x.shape.len() + axes.len();
    let mut ax: Vec<usize> = axes.iter().map(|a| norm_axis(*a, r)).collect::<Result<_, _>>()?;
    ax.sort_unstable();
    let mut shape = x.shape.clone();
    for a in ax { shape.insert(a.min(shape.len()), 1); }
    Ok(Tensor { shape, data: x.data.clone() })
}

fn concat(ts: &[&Tensor], axis: i64) -> Result<Tensor, OnnxError> {
    let first = ts.first().ok_or_else(|| OnnxError("Concat without inputs".into()))?;
    let ax = norm_axis(axis, first.shape.len())?;
    let outer: usize = first.shape[..ax].iter().product();
    let mut shape = first.shape.clone();
    shape[ax] = 0;
    for t in ts {
        if t.shape.len() != first.shape.len() || t.shape.iter().enumerate().any(|(i, d)| i != ax && *d != first.shape[i]) { return err("Concat: shapes differ"); }
        shape[ax] += t.shape[ax];
    }
    let mut out = Vec::with_capacity(shape.iter().product());
    for o in 0..outer {
        for t in ts {
            let inner: usize = t.shape[ax..].iter().product();
            out.extend_from_slice(&t.floats()?[o * inner..(o + 1) * inner]);
        }
    }
    Ok(Tensor::f32(shape, out))
}

/// ONNX GRU, forward direction, default activations (σ, tanh), layout 0:
/// X [seq, batch, in], W [1, 3H, in], R [1, 3H, H], B [1, 6H], initial_h [1, batch, H]; gates z, r, h.
/// Outputs Y [seq, 1, batch, H] and Y_h [1, batch, H].
fn gru(nd: &Node, x: &Tensor, w: &Tensor, r: &Tensor, b: Option<&Tensor>, h0: Option<&Tensor>) -> Result<Vec<Tensor>, OnnxError> {
    if nd.attrs.get("direction").and_then(|a| a.s.as_deref()).is_some_and(|d| d != "forward") { return err("GRU: only the forward direction is supported"); }
    if nd.i("layout", 0) != 0 { return err("GRU: only layout 0 is supported"); }
    if nd.attrs.get("activations").is_some_and(|a| a.strings.iter().map(|s| s.as_str()).ne(["Sigmoid", "Tanh"])) { return err("GRU: only the default activations are supported"); }
    if nd.attrs.contains_key("clip") { return err("GRU: clip is not supported"); }
    let lbr = nd.i("linear_before_reset", 0) != 0;
    if x.shape.len() != 3 || w.shape.len() != 3 || r.shape.len() != 3 || w.shape[0] != 1 { return err("GRU: bad input ranks"); }
    let (seq, batch, inp) = (x.shape[0], x.shape[1], x.shape[2]);
    let h = r.shape[2];
    if w.shape[1] != 3 * h || w.shape[2] != inp || r.shape[1] != 3 * h { return err(format!("GRU: weight shapes {:?} / {:?} do not match input {:?}", w.shape, r.shape, x.shape)); }
    if nd.i("hidden_size", h as i64) != h as i64 { return err("GRU: hidden_size attribute does not match R"); }
    let (xv, wv, rv) = (x.floats()?, w.floats()?, r.floats()?);
    let zero = vec![0f32; 6 * h];
    let bv = match b { Some(t) if t.len() == 6 * h => t.floats()?, Some(_) => return err("GRU: B must be [1, 6H]"), None => &zero };
    let mut hs = match h0 {
        Some(t) if t.len() == batch * h => t.floats()?.to_vec(),
        Some(t) => return err(format!("GRU: initial_h has shape {:?}, expected [1, {batch}, {h}]", t.shape)),
        None => vec![0f32; batch * h],
    };
    let mut y = Vec::with_capacity(seq * batch * h);
    let dot = |m: &[f32], row: usize, cols: usize, v: &[f32]| -> f32 { dot(&m[row * cols..(row + 1) * cols], v) };
    let mut gx = vec![0f32; 3 * h];
    let mut gh = vec![0f32; 3 * h];
    for t in 0..seq {
        for bi in 0..batch {
            let xt = &xv[(t * batch + bi) * inp..(t * batch + bi + 1) * inp];
            let hp = hs[bi * h..(bi + 1) * h].to_vec();
            for j in 0..3 * h { gx[j] = dot(wv, j, inp, xt) + bv[j]; }
            // gates z and r use R·h; the candidate uses R·h (linear_before_reset) or R·(r ⊙ h).
            for j in 0..2 * h { gh[j] = dot(rv, j, h, &hp) + bv[3 * h + j]; }
            let z: Vec<f32> = (0..h).map(|j| sigmoid(gx[j] + gh[j])).collect();
            let rg: Vec<f32> = (0..h).map(|j| sigmoid(gx[h + j] + gh[h + j])).collect();
            if lbr {
                for j in 0..h { gh[2 * h + j] = dot(rv, 2 * h + j, h, &hp) + bv[5 * h + j]; }
            } else {
                let rh: Vec<f32> = (0..h).map(|j| rg[j] * hp[j]).collect();
                for j in 0..h { gh[2 * h + j] = dot(rv, 2 * h + j, h, &rh) + bv[5 * h + j]; }
            }
            for j in 0..h {
                let n = if lbr { (gx[2 * h + j] + rg[j] * gh[2 * h + j]).tanh() } else { (gx[2 * h + j] + gh[2 * h + j]).tanh() };
                hs[bi * h + j] = (1.0 - z[j]) * n + z[j] * hp[j];
            }
        }
        y.extend_from_slice(&hs);
    }
    Ok(vec![Tensor::f32(vec![seq, 1, batch, h], y), Tensor::f32(vec![1, batch, h], hs)])
}

#[cfg(test)]
mod tests {
    use super::*;

    // A tiny protobuf writer for hand-built test models.
    fn varint(mut v: u64, out: &mut Vec<u8>) { loop { let b = (v & 0x7f) as u8; v >>= 7; if v == 0 { out.push(b); break; } out.push(b | 0x80); } }
    fn field_bytes(n: u64, b: &[u8], out: &mut Vec<u8>) { varint(n << 3 | 2, out); varint(b.len() as u64, out); out.extend_from_slice(b); }
    fn field_varint(n: u64, v: u64, out: &mut Vec<u8>) { varint(n << 3, out); varint(v, out); }
    fn tensor(name: &str, dims: &[i64], v: &[f32]) -> Vec<u8> {
        let mut t = Vec::new();
        for d in dims { field_varint(1, *d as u64, &mut t); }
        field_varint(2, 1, &mut t);
        field_bytes(8, name.as_bytes(), &mut t);
        let raw: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        field_bytes(9, &raw, &mut t);
        t
    }
    fn node(op: &str, ins: &[&str], outs: &[&str], attrs: &[Vec<u8>]) -> Vec<u8> {
        let mut n = Vec::new();
        for i in ins { field_bytes(1, i.as_bytes(), &mut n); }
        for o in outs { field_bytes(2, o.as_bytes(), &mut n); }
        field_bytes(4, op.as_bytes(), &mut n);
        for a in attrs { field_bytes(5, a, &mut n); }
        n
    }
    fn attr_f(name: &str, f: f32) -> Vec<u8> { let mut a = Vec::new(); field_bytes(1, name.as_bytes(), &mut a); varint(2 << 3 | 5, &mut a); a.extend_from_slice(&f.to_le_bytes()); a }
    fn attr_i(name: &str, i: i64) -> Vec<u8> { let mut a = Vec::new(); field_bytes(1, name.as_bytes(), &mut a); field_varint(3, i as u64, &mut a); a }
    fn value_info(name: &str, dims: &[u64]) -> Vec<u8> {
        let mut shape = Vec::new();
        for d in dims { let mut dim = Vec::new(); field_varint(1, *d, &mut dim); field_bytes(1, &dim, &mut shape); }
        let mut tt = Vec::new();
        field_varint(1, 1, &mut tt);
        field_bytes(2, &shape, &mut tt);
        let mut tp = Vec::new();
        field_bytes(1, &tt, &mut tp);
        let mut vi = Vec::new();
        field_bytes(1, name.as_bytes(), &mut vi);
        field_bytes(2, &tp, &mut vi);
        vi
    }
    fn model(nodes: &[Vec<u8>], inits: &[Vec<u8>], ins: &[Vec<u8>], outs: &[Vec<u8>]) -> Vec<u8> {
        let mut g = Vec::new();
        for n in nodes { field_bytes(1, n, &mut g); }
        for t in inits { field_bytes(5, t, &mut g); }
        for i in ins { field_bytes(11, i, &mut g); }
        for o in outs { field_bytes(12, o, &mut g); }
        let mut m = Vec::new();
        field_varint(1, 8, &mut m);
        field_bytes(7, &g, &mut m);
        let mut op = Vec::new();
        field_varint(2, 13, &mut op);
        field_bytes(8, &op, &mut m);
        m
    }

    #[test]
    fn gemm_leaky_relu_sigmoid_hand_worked() {
        // y = sigmoid(leaky(x W^T + b)), W = [[1, -2], [0.5, 0.5]], b = [0, -1], x = [1, 1]
        // x W^T + b = [-1, 0] → leaky(0.1) = [-0.1, 0] → sigmoid = [0.47502, 0.5]
        let bytes = model(
            &[node("Gemm", &["x", "W", "b"], &["g"], &[attr_i("transB", 1)]), node("LeakyRelu", &["g"], &["l"], &[attr_f("alpha", 0.1)]), node("Sigmoid", &["l"], &["y"], &[])],
            &[tensor("W", &[2, 2], &[1.0, -2.0, 0.5, 0.5]), tensor("b", &[2], &[0.0, -1.0])],
            &[value_info("x", &[1, 2])],
            &[value_info("y", &[1, 2])],
        );
        let m = OnnxModel::parse(&bytes).unwrap();
        assert_eq!(m.opset, 13);
        assert_eq!(m.inputs.len(), 1);
        let y = m.run(&[Tensor::f32(vec![1, 2], vec![1.0, 1.0])]).unwrap().remove(0);
        assert_eq!(y.shape, vec![1, 2]);
        let v = y.into_floats().unwrap();
        assert!((v[0] - 1.0 / (1.0 + 0.1f32.exp())).abs() < 1e-6, "{v:?}");
        assert!((v[1] - 0.5).abs() < 1e-6);
        // wrong input shape is an error, not a panic
        assert!(m.run(&[Tensor::f32(vec![1, 3], vec![0.0; 3])]).is_err());
    }

    #[test]
    fn gru_one_unit_hand_worked() {
        // H = 1, input 1: W = [wz, wr, wh] = [1, 2, 3]; R = [0.5, 0.5, 0.5]; B = [0.1, 0, 0, 0, 0, 0.2]
        // x = 1, h0 = 0.4:
        //   z = σ(1 + 0.1 + 0.2) = σ(1.3); r = σ(2 + 0.2) = σ(2.2)
        //   lbr=1: n = tanh(3 + r (0.5·0.4 + 0.2));   lbr=0: n = tanh(3 + 0.5 (r·0.4) + 0.2)
        //   h = (1 − z) n + z · 0.4
        for lbr in [0, 1] {
            let bytes = model(
                &[node("GRU", &["x", "W", "R", "B", "", "h0"], &["Y", "Yh"], &[attr_i("hidden_size", 1), attr_i("linear_before_reset", lbr)])],
                &[tensor("W", &[1, 3, 1], &[1.0, 2.0, 3.0]), tensor("R", &[1, 3, 1], &[0.5, 0.5, 0.5]), tensor("B", &[1, 6], &[0.1, 0.0, 0.0, 0.0, 0.0, 0.2])],
                &[value_info("x", &[1, 1, 1]), value_info("h0", &[1, 1, 1])],
                &[value_info("Y", &[1, 1, 1, 1]), value_info("Yh", &[1, 1, 1])],
            );
            let m = OnnxModel::parse(&bytes).unwrap();
            let out = m.run(&[Tensor::f32(vec![1, 1, 1], vec![1.0]), Tensor::f32(vec![1, 1, 1], vec![0.4])]).unwrap();
            let s = |x: f64| 1.0 / (1.0 + (-x).exp());
            let (z, r) = (s(1.3), s(2.2));
            let n = if lbr == 1 { (3.0 + r * (0.5 * 0.4 + 0.2)).tanh() } else { (3.0 + 0.5 * (r * 0.4) + 0.2).tanh() };
            let want = (1.0 - z) * n + z * 0.4;
            assert_eq!(out[0].shape, vec![1, 1, 1, 1]);
            assert_eq!(out[1].shape, vec![1, 1, 1]);
            let got = out[1].clone().into_floats().unwrap()[0] as f64;
            assert!((got - want).abs() < 1e-6, "lbr={lbr}: {got} vs {want}");
        }
    }

    #[test]
    fn shape_ops_and_broadcast() {
        let x = Tensor::f32(vec![2, 3], (0..6).map(|v| v as f32).collect());
        let u = unsqueeze(&x, &[0]).unwrap();
        assert_eq!(u.shape, vec![1, 2, 3]);
        assert_eq!(squeeze(&u, &[0]).unwrap().shape, vec![2, 3]);
        assert_eq!(reshape(&x, &[-1]).unwrap().shape, vec![6]);
        assert_eq!(reshape(&x, &[3, -1]).unwrap().shape, vec![3, 2]);
        assert!(reshape(&x, &[3, 0]).is_err(), "0 copies dimension 1 (3): 9 ≠ 6 elements");
        let row = Tensor::f32(vec![3], vec![10.0, 20.0, 30.0]);
        let s = broadcast(&x, &row, |a, b| a + b).unwrap();
        assert_eq!(s.into_floats().unwrap(), vec![10.0, 21.0, 32.0, 13.0, 24.0, 35.0]);
        let c = concat(&[&x, &x], 1).unwrap();
        assert_eq!(c.shape, vec![2, 6]);
        assert_eq!(&c.into_floats().unwrap()[..6], &[0.0, 1.0, 2.0, 0.0, 1.0, 2.0]);
    }

    #[test]
    fn rejects_unknown_operators_and_garbage() {
        let bytes = model(&[node("Conv", &["x"], &["y"], &[])], &[], &[value_info("x", &[1])], &[value_info("y", &[1])]);
        let e = OnnxModel::parse(&bytes).unwrap_err();
        assert!(e.0.contains("Conv"), "{e}");
        assert!(OnnxModel::parse(b"not a model at all").is_err());
        assert!(OnnxModel::parse(&[]).is_err());
        // truncated model
        let good = model(&[node("Identity", &["x"], &["y"], &[])], &[], &[value_info("x", &[1])], &[value_info("y", &[1])]);
        assert!(OnnxModel::parse(&good[..good.len() - 3]).is_err());
    }

    proptest::proptest! {
        #[test]
        fn never_panics_on_arbitrary_bytes(b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
            let _ = OnnxModel::parse(&b);
        }
    }
}
