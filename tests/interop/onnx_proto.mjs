// A minimal ONNX model writer (protobuf wire format by hand, from onnx/onnx.proto): enough for
// float32 graphs of standard operators, so tests can build an ONNX twin of a generated .nk model
// and run it in ONNX Runtime. Field numbers are onnx.proto's (ModelProto, GraphProto, NodeProto,
// AttributeProto, TensorProto, ValueInfoProto, TypeProto, TensorShapeProto).

function varint(n) {
	const out = [];
	let v = BigInt.asUintN(64, BigInt(n));
	do {
		let byte = Number(v & 0x7fn);
		v >>= 7n;
		if (v) byte |= 0x80;
		out.push(byte);
	} while (v);
	return out;
}

const key = (field, wire) => varint((field << 3) | wire);
const cat = (parts) => Buffer.concat(parts.map((p) => (Buffer.isBuffer(p) ? p : Buffer.from(p))));
const vint = (field, n) => cat([key(field, 0), varint(n)]);
const bytes = (field, b) => cat([key(field, 2), varint(b.length), b]);
const str = (field, s) => bytes(field, Buffer.from(s, "utf8"));
const msg = (field, parts) => bytes(field, cat(parts));

const FLOAT = 1, INT64 = 7;
const ATTR_FLOAT = 1, ATTR_INT = 2, ATTR_STRING = 3, ATTR_INTS = 7;

// TensorProto (field 8 name, 1 dims, 2 data_type, 9 raw_data: little-endian values).
function tensor(name, dims, values, type = FLOAT) {
	const raw = type === FLOAT ? Buffer.from(Float32Array.from(values).buffer)
		: Buffer.from(BigInt64Array.from(values.map(BigInt)).buffer);
	return [...dims.map((d) => vint(1, d)), vint(2, type), str(8, name), bytes(9, raw)];
}

// AttributeProto: name 1, f 2 (fixed32), i 3, s 4, ints 8, type 20.
function attribute(name, value) {
	if (typeof value === "string") return [str(1, name), str(4, value), vint(20, ATTR_STRING)];
	if (Array.isArray(value)) return [str(1, name), ...value.map((v) => vint(8, v)), vint(20, ATTR_INTS)];
	if (Number.isInteger(value)) return [str(1, name), vint(3, value), vint(20, ATTR_INT)];
	const f = Buffer.alloc(4);
	f.writeFloatLE(value);
	return [str(1, name), cat([key(2, 5), f]), vint(20, ATTR_FLOAT)];
}

// ValueInfoProto of a float tensor: name 1, type 2 { tensor_type 1 { elem_type 1, shape 2 { dim 1 { dim_value 1 } } } }.
function valueInfo(name, dims) {
	const shape = dims.map((d) => msg(1, [vint(1, d)]));
	return [str(1, name), msg(2, [msg(1, [vint(1, FLOAT), msg(2, shape)])])];
}

/** A graph under construction: add initializers and nodes, then encode(). */
export class Graph {
	constructor(name) {
		this.name = name;
		this.nodes = [];
		this.inits = [];
		this.inputs = [];
		this.outputs = [];
		this.n = 0;
	}
	/** A fresh value name. */
	tmp(prefix = "t") {
		return `${prefix}${this.n++}`;
	}
	/** A float32 (or int64) initializer; returns its name. */
	init(dims, values, type = FLOAT) {
		const name = this.tmp("w");
		this.inits.push(tensor(name, dims, values, type));
		return name;
	}
	/** Node op(inputs) -> one new output (returned); attrs: {name: int | float | string | int[]}. */
	node(op, inputs, attrs = {}) {
		const out = this.tmp();
		const parts = [...inputs.map((i) => str(1, i)), str(2, out), str(3, out), str(4, op)];
		for (const [k, v] of Object.entries(attrs)) parts.push(msg(5, attribute(k, v)));
		this.nodes.push(parts);
		return out;
	}
	input(name, dims) {
		this.inputs.push(valueInfo(name, dims));
		return name;
	}
	output(name, dims) {
		this.outputs.push(valueInfo(name, dims));
	}
	/** ModelProto: ir_version 1 = 8, opset_import 8 { version 2 = 17 }, graph 7. */
	encode() {
		const graph = [
			...this.nodes.map((n) => msg(1, n)), str(2, this.name), ...this.inits.map((t) => msg(5, t)),
			...this.inputs.map((v) => msg(11, v)), ...this.outputs.map((v) => msg(12, v)),
		];
		return cat([vint(1, 8), str(2, "fmtkit-tests"), msg(8, [str(1, ""), vint(2, 17)]), msg(7, graph)]);
	}
}

export { FLOAT, INT64 };
