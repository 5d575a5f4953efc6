#!/usr/bin/env bats
# Values of text datasets (CSV, JSON Lines) that no narrow reading may change: integers above
# int64 (uint64) and beyond any integer type, and timestamps with and without a zone (the
# forms fmtkit and DuckDB write). Issue 20, items 5 and 6.

bats_require_minimum_version 1.5.0

setup() {
	load helpers
	cd "$BATS_TEST_TMPDIR"
}

# fmt-inspect's schema lines of FILE, without the "schema (N columns):" line.
schema_of() {
	fmt-inspect --schema "$@" | tail -n +2
}

@test "CSV: integers above int64 are uint64; int64's extremes stay int64; no value changes on the way" {
	printf 'u,i,small\n18446744073709551615,-9223372036854775808,0\n9223372036854775808,9223372036854775807,18446744073709551615\n' >in.csv
	run schema_of in.csv
	assert_success
	assert_output "$(printf '  u  uint64  not null\n  i  int64  not null\n  small  uint64  not null')"
	fmt-convert in.csv a.ald
	fmt-convert a.ald b.csv
	cmp in.csv b.csv
}

@test "uint64 max and int64 min round-trip Arrow -> JSON Lines -> .ald -> CSV byte for byte" {
	printf 'u,i\n18446744073709551615,-9223372036854775808\n0,9223372036854775807\n,\n' >in.csv
	printf '{"u": "uint64", "i": "int64"}' >schema.json
	fmt-convert --schema schema.json in.csv a.arrow
	run schema_of a.arrow
	assert_output "$(printf '  u  uint64\n  i  int64')"
	fmt-convert a.arrow b.jsonl
	run cat b.jsonl
	assert_output "$(printf '{"u":18446744073709551615,"i":-9223372036854775808}\n{"u":0,"i":9223372036854775807}\n{"u":null,"i":null}')"
	# what fmt-convert writes it reads back: the JSON Lines reader took 2^64-1 for an error (exit 4)
	run fmt-convert b.jsonl c.ald
	assert_success
	run schema_of c.ald
	assert_output "$(printf '  u  uint64\n  i  int64')"
	fmt-convert c.ald d.csv
	cmp in.csv d.csv
	fmt-convert c.ald e.arrow
	cmp a.arrow e.arrow
}

@test "CSV: integers no integer type holds stay text, never rounded; --schema float64 rounds them when asked" {
	# 2^64 fits neither int64 nor uint64; -1 and 2^64-1 fit no one integer type together; in a
	# column with a float every number is read as a float (as 0.1 is)
	printf 'big,mixed,f\n18446744073709551616,-1,0.5\n1,18446744073709551615,18446744073709551615\n' >in.csv
	run schema_of in.csv
	assert_output "$(printf '  big  utf8  not null\n  mixed  utf8  not null\n  f  float64  not null')"
	fmt-convert in.csv a.ald
	fmt-convert a.ald b.csv
	run cat b.csv
	assert_output "$(printf 'big,mixed,f\n18446744073709551616,-1,0.5\n1,18446744073709551615,1.8446744073709552e+19')"
	printf '{"big": "float64"}' >schema.json
	fmt-convert --schema schema.json in.csv c.csv
	run cat c.csv
	assert_output "$(printf 'big,mixed,f\n1.8446744073709552e+19,-1,0.5\n1.0,18446744073709551615,1.8446744073709552e+19')"
	printf '{"big": "uint64"}' >schema.json
	run fmt-convert --schema schema.json in.csv d.csv
	assert_failure 4
	assert_output 'fmt-convert: error: in.csv: line 2, column 1: "18446744073709551616" is not a uint64'
	[ ! -e d.csv ]
}

@test "JSON Lines: integers above int64 are uint64 at the top level; text with a negative; float64 with a float" {
	printf '{"u":18446744073709551615,"n":-1,"f":1.5,"s":"x"}\n{"u":1,"n":18446744073709551615,"f":18446744073709551615,"s":18446744073709551615}\n' >in.jsonl
	run schema_of in.jsonl
	assert_output "$(printf '  u  uint64  not null\n  n  utf8  not null\n  f  float64  not null\n  s  utf8  not null')"
	fmt-convert in.jsonl out.csv
	run cat out.csv
	assert_output "$(printf 'u,n,f,s\n18446744073709551615,-1,1.5,x\n1,18446744073709551615,1.8446744073709552e+19,18446744073709551615')"
	# the same key spelled with escapes and spaces around the number
	printf '{"\\u0075" : 18446744073709551615 , "v":[1,2]}\n{"u":7,"v":[3,4]}\n' >esc.jsonl
	fmt-convert esc.jsonl esc.csv
	run cat esc.csv
	assert_output "$(printf 'u,v\n18446744073709551615,"[1,2]"\n7,"[3,4]"')"
}

@test "JSON Lines: an integer beyond uint64, or above int64 inside an array or object, is exit 4 naming it" {
	printf '{"a":1}\n{"a":18446744073709551616}\n' >big.jsonl
	run fmt-convert big.jsonl out.csv
	assert_failure 4
	assert_output 'fmt-convert: error: big.jsonl: line 2, column 6: the integer 18446744073709551616 is beyond int64 and uint64 (write it with a fraction or an exponent for a float)'
	printf '{"a":-9223372036854775809}\n' >neg.jsonl
	run fmt-convert neg.jsonl out.csv
	assert_failure 4
	assert_output 'fmt-convert: error: neg.jsonl: line 1, column 6: the integer -9223372036854775809 is beyond int64 and uint64 (write it with a fraction or an exponent for a float)'
	printf '{"a":[1,18446744073709551615]}\n' >list.jsonl
	run fmt-convert list.jsonl out.csv
	assert_failure 4
	assert_output 'fmt-convert: error: list.jsonl: line 1, column 9: the integer 18446744073709551615 is beyond int64 inside an array or object (only a top-level value can be a uint64)'
	printf '{"a":{"b":1}}\n{"a":{"b":18446744073709551615}}\n' >obj.jsonl
	run fmt-convert obj.jsonl out.csv
	assert_failure 4
	assert_output --partial 'the integer 18446744073709551615 is beyond int64 inside an array or object'
	[ ! -e out.csv ]
	# a string that looks like one is a string
	printf '{"a":"18446744073709551616"}\n' >str.jsonl
	run fmt-convert str.jsonl out.csv
	assert_success
	run cat out.csv
	assert_output "$(printf 'a\n18446744073709551616')"
}

@test "timestamps without a zone (as fmt-convert writes them) infer a zone-less type and round-trip Arrow -> CSV -> Arrow" {
	printf 't,ms\n1966-10-31T14:13:20,1966-10-31T14:13:20.125\n2024-02-29T23:59:59,1969-12-31T23:59:59.999\n' >in.csv
	run schema_of in.csv
	assert_output "$(printf '  t  timestamp[s]  not null\n  ms  timestamp[ms]  not null')"
	fmt-convert in.csv a.arrow
	fmt-convert a.arrow b.csv
	cmp in.csv b.csv
	fmt-convert b.csv c.arrow
	cmp a.arrow c.arrow
	fmt-convert a.arrow d.jsonl
	run cat d.jsonl
	assert_line --index 0 '{"t":"1966-10-31T14:13:20","ms":"1966-10-31T14:13:20.125"}'
	fmt-convert d.jsonl e.arrow
	cmp a.arrow e.arrow
}

@test "zoned timestamps stay UTC; offsets +hh:mm, +hhmm, +hh are read; zoned and zone-less in one column are text" {
	printf 't\n2000-01-01T00:00:00Z\n2000-01-01T05:30:00+05:30\n2000-01-01T05:30:00+0530\n1999-12-31T22:00:00-02\n' >z.csv
	run schema_of z.csv
	assert_output '  t  timestamp[s, UTC]  not null'
	fmt-convert z.csv z.arrow
	fmt-convert z.arrow z2.csv
	run cat z2.csv
	assert_output "$(printf 't\n2000-01-01T00:00:00Z\n2000-01-01T00:00:00Z\n2000-01-01T00:00:00Z\n2000-01-01T00:00:00Z')"
	fmt-convert z2.csv z3.arrow
	cmp z.arrow z3.arrow
	printf 't\n2000-01-01T00:00:00Z\n2000-01-01T00:00:00\n' >mixed.csv
	run schema_of mixed.csv
	assert_output '  t  utf8  not null'
	# not timestamps: a bad offset, a bare sign, a fraction without digits
	printf 't\n2000-01-01T00:00:00+5\n2000-01-01T00:00:00+\n2000-01-01T00:00:00.\n' >bad.csv
	run schema_of bad.csv
	assert_output '  t  utf8  not null'
}

@test "DuckDB's timestamps (a space, microseconds, +00) round-trip with their types" {
	printf 'ts,tz\n2000-01-01 00:02:03.456789,2000-01-01 00:02:03.456789+00\n1970-01-01 00:00:00,1970-01-01 01:00:00+01\n' >duck.csv
	run schema_of duck.csv
	assert_output "$(printf '  ts  timestamp[us]  not null\n  tz  timestamp[us, UTC]  not null')"
	fmt-convert duck.csv a.arrow
	fmt-convert a.arrow b.csv
	run cat b.csv
	assert_output "$(printf 'ts,tz\n2000-01-01T00:02:03.456789,2000-01-01T00:02:03.456789Z\n1970-01-01T00:00:00,1970-01-01T00:00:00Z')"
	fmt-convert b.csv c.arrow
	cmp a.arrow c.arrow
}

@test "--schema: timestamp[us] is zone-less, timestamp[us, UTC] zoned, timestamp as the values say; a value of the other kind is exit 4" {
	printf 'a,b\n2000-01-01T00:00:00,2000-01-01T00:00:00Z\n' >in.csv
	printf '{"a": "timestamp[us]", "b": "timestamp[ms, UTC]"}' >s1.json
	fmt-convert --schema s1.json in.csv a.arrow
	run schema_of a.arrow
	assert_output "$(printf '  a  timestamp[us]  not null\n  b  timestamp[ms, UTC]  not null')"
	printf '{"a": "timestamp", "b": "timestamp"}' >s2.json
	fmt-convert --schema s2.json in.csv b.arrow
	run schema_of b.arrow
	assert_output "$(printf '  a  timestamp[us]  not null\n  b  timestamp[us, UTC]  not null')"
	printf '{"b": "timestamp[s, Europe/Paris]"}' >s3.json
	fmt-convert --schema s3.json in.csv c.arrow
	run schema_of c.arrow
	assert_output "$(printf '  a  timestamp[s]  not null\n  b  timestamp[s, Europe/Paris]  not null')"
	printf '{"b": "timestamp[us]"}' >s4.json
	run fmt-convert --schema s4.json in.csv d.arrow
	assert_failure 4
	assert_output 'fmt-convert: error: in.csv: line 2, column 2: "2000-01-01T00:00:00Z" is not a timestamp[us]'
	printf '{"a": "timestamp[us, UTC]"}' >s5.json
	run fmt-convert --schema s5.json in.csv d.arrow
	assert_failure 4
	assert_output 'fmt-convert: error: in.csv: line 2, column 1: "2000-01-01T00:00:00" is not a timestamp[us, UTC]'
	[ ! -e d.arrow ]
	for bad in 'timestamp[us' 'timestamp[us, ]' 'timestamp[xs]' 'timestamp[us,UTC]'; do
		printf '{"a": "%s"}' "$bad" >s6.json
		run fmt-convert --schema s6.json in.csv e.arrow
		assert_failure 2
		assert_output --partial "--schema: column 'a': unknown type"
	done
}

@test "timestamp[ns] from its first to its last nanosecond (INT64_MIN, INT64_MAX); one past either end is exit 4" {
	# the earliest second: its seconds times 10^9 are below INT64_MIN, the sum with the fraction is not
	printf 'ts\n1677-09-21T00:12:43.145224192\n1677-09-21T00:12:43.999999999\n2262-04-11T23:47:16.854775807\n' >edge.csv
	run schema_of edge.csv
	assert_output '  ts  timestamp[ns]  not null'
	run fmt-convert edge.csv edge.arrow
	assert_success
	fmt-convert edge.arrow back.csv
	cmp edge.csv back.csv
	printf '{"ts":"1677-09-21T00:12:43.145224192"}\n{"ts":"2262-04-11T23:47:16.854775807"}\n' >edge.jsonl
	fmt-convert edge.jsonl edge.parquet
	run fmt-convert --to jsonl edge.parquet -
	assert_output "$(cat edge.jsonl)"
	printf 'ts\n1677-09-21T00:12:43.145224191\n' >low.csv
	run fmt-convert low.csv low.arrow
	assert_failure 4
	assert_output 'fmt-convert: error: low.csv: line 2, column 1: "1677-09-21T00:12:43.145224191" is not a timestamp[ns]'
	printf 'ts\n2262-04-11T23:47:16.854775808\n' >high.csv
	run fmt-convert high.csv high.arrow
	assert_failure 4
	assert_output 'fmt-convert: error: high.csv: line 2, column 1: "2262-04-11T23:47:16.854775808" is not a timestamp[ns]'
	printf '{"ts":"1677-09-21T00:12:43.145224191"}\n' >low.jsonl
	run fmt-convert low.jsonl low.arrow
	assert_failure 4
	assert_output 'fmt-convert: error: low.jsonl: line 1: key "ts": timestamp out of range'
	[ ! -e low.arrow ] && [ ! -e high.arrow ]
}

@test "JSON Lines: NaN and infinities, written as the strings \"NaN\", \"inf\", \"-inf\", read back into a float64 column; such strings among text stay text" {
	printf 'id,score\n1,1.5\n2,nan\n3,inf\n4,-inf\n5,\n' >s.csv
	fmt-convert s.csv s.jsonl
	run cat s.jsonl
	assert_output "$(printf '{"id":1,"score":1.5}\n{"id":2,"score":"NaN"}\n{"id":3,"score":"inf"}\n{"id":4,"score":"-inf"}\n{"id":5,"score":null}')"
	run schema_of s.jsonl
	assert_output "$(printf '  id  int64  not null\n  score  float64')"
	run fmt-convert --to jsonl s.jsonl -
	assert_output "$(cat s.jsonl)"
	fmt-convert s.jsonl back.csv
	run cat back.csv
	assert_output "$(printf 'id,score\n1,1.5\n2,NaN\n3,inf\n4,-inf\n5,')"
	# the same Arrow bytes as from the CSV: NaN 0x7ff8000000000000, +inf and -inf with their signs
	fmt-convert s.csv a.arrow
	fmt-convert s.jsonl b.arrow
	cmp a.arrow b.arrow
	/usr/bin/python3 -c 'import struct, sys; sys.exit(open("b.arrow", "rb").read().find(struct.pack("<4Q", 0x3ff8000000000000, 0x7ff8000000000000, 0x7ff0000000000000, 0xfff0000000000000)) < 0)'
	run fmt-shard concat s.csv s.jsonl -o both.csv
	assert_success
	assert_output "both.csv: 10 rows from 2 files"
	# JavaScript's Infinity, -Infinity among integers: float64
	printf '{"a":1}\n{"a":"-Infinity"}\n{"a":"Infinity"}\n' >js.jsonl
	run fmt-convert --to csv js.jsonl -
	assert_output "$(printf 'a\n1.0\n-inf\ninf')"
	# without a number, or among other strings, they are text
	printf '{"w":"NaN","v":"inf"}\n{"w":"naan","v":"-inf"}\n' >text.jsonl
	run schema_of text.jsonl
	assert_output "$(printf '  w  utf8  not null\n  v  utf8  not null')"
	run fmt-convert --to jsonl text.jsonl -
	assert_output "$(cat text.jsonl)"
	printf '{"w":1.5}\n{"w":"NaN"}\n{"w":"nan"}\n' >other.jsonl
	run schema_of other.jsonl
	assert_output '  w  utf8  not null'
}

@test "JSON Lines: a NaN or an infinity in a list of floats is written as a string (JSON has no such number) and read back into the list" {
	printf '{"v":[1.5,"NaN"],"n":[1,2]}\n{"v":["-inf",2.0],"n":[3,4]}\n' >l.jsonl
	run schema_of l.jsonl
	assert_output "$(printf '  v  fixed_size_list<float64>[2]  not null\n  n  fixed_size_list<int64>[2]  not null')"
	fmt-convert l.jsonl l.arrow
	run fmt-convert --to jsonl l.arrow -
	assert_success
	assert_output "$(cat l.jsonl)"
	fmt-convert l.arrow back.jsonl
	fmt-convert back.jsonl back.arrow
	cmp l.arrow back.arrow
	# other strings in a list make it text, as before
	printf '{"v":["NaN","x"]}\n' >s.jsonl
	run fmt-convert --to jsonl s.jsonl -
	assert_output '{"v":"[\"NaN\",\"x\"]"}'
}

@test "fmt-inspect --head --json spells NaN and the infinities as the tools' JSON does (\"nan\", \"inf\", \"-inf\"), JSON Lines data keeps \"NaN\"" {
	printf 'id,score\n1,1.5\n2,nan\n3,inf\n4,-inf\n5,\n' >s.csv
	run fmt-inspect --head 5 --json s.csv
	assert_success
	assert_output '{"file":"s.csv","format":"csv","rows":5,"head":[{"id":1,"score":1.5},{"id":2,"score":"nan"},{"id":3,"score":"inf"},{"id":4,"score":"-inf"},{"id":5,"score":null}]}'
	# in a list column too; the same file as JSON Lines data says "NaN"
	printf '{"v":[1.5,"NaN"]}\n{"v":["-inf",2.0]}\n' >l.jsonl
	fmt-convert l.jsonl l.arrow
	run fmt-inspect --head 2 --json l.arrow
	assert_success
	assert_output '{"file":"l.arrow","format":"arrow","rows":2,"head":[{"v":[1.5,"nan"]},{"v":["-inf",2.0]}]}'
	run fmt-convert --to jsonl l.arrow -
	assert_output "$(cat l.jsonl)"
}

@test "JSON Lines: zone-less timestamp strings are zone-less timestamps; zoned ones UTC" {
	printf '{"a":"2000-01-01 00:02:03.456789","b":"2000-01-01T00:00:00Z"}\n{"a":"2000-01-02T00:00:00","b":"2000-01-01T01:00:00+01:00"}\n' >in.jsonl
	run schema_of in.jsonl
	assert_output "$(printf '  a  timestamp[us]  not null\n  b  timestamp[s, UTC]  not null')"
	fmt-convert in.jsonl out.jsonl
	run cat out.jsonl
	assert_output "$(printf '{"a":"2000-01-01T00:02:03.456789","b":"2000-01-01T00:00:00Z"}\n{"a":"2000-01-02T00:00:00","b":"2000-01-01T00:00:00Z"}')"
}
