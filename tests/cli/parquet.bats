#!/usr/bin/env bats
# Parquet (issue 24): files DuckDB wrote (tests/data/parquet, made by tests/interop/parquet_data.mjs,
# whose values tests/interop/parquet.test.mjs checks against DuckDB's) read in each page version,
# codec and encoding; what scripts/gen/parquet-cases writes from the specification (DELTA_BYTE_ARRAY,
# RLE booleans, FLOAT16, INT96, PLAIN_DICTIONARY, CRCs) and its hostile copies; fmtkit's writer
# (row groups, codecs, dictionaries, statistics, the .ald card as key/value metadata).

bats_require_minimum_version 1.5.0

setup_file() {
	load helpers
	"$REPO_ROOT/scripts/gen/parquet-cases" "$BATS_FILE_TMPDIR/cases"
}

setup() {
	load helpers
	cd "$BATS_TEST_TMPDIR"
	DATA="$REPO_ROOT/tests/data/parquet"
	CASES="$BATS_FILE_TMPDIR/cases"
}

@test "DuckDB's files in every codec and page version convert to DuckDB's values (the expected CSV)" {
	for f in types-v1-snappy types-v1-gzip-nodict types-v1-none; do
		run fmt-convert -q "$DATA/$f.parquet" "$f.csv"
		assert_success
		cmp "$f.csv" "$DATA/types-300.csv" || fail "$f"
	done
	for f in types-v2-zstd types-v2-lz4raw; do
		run fmt-convert -q "$DATA/$f.parquet" "$f.csv"
		assert_success
		head -n 301 "$f.csv" | cmp - "$DATA/types-300.csv" || fail "$f"
		assert_equal "$(wc -l <"$f.csv")" 2101
		assert_equal "$(sha256sum <"$f.csv" | cut -c1-64)" 7a6a0a6b319a99a12ae49367a98095d338265ac0f7f64fdcf12fae435edd2b57
	done
	# the rows with nulls in every nullable column, exactly
	assert_equal "$(sed -n 2p "$DATA/types-300.csv")" \
		"0,,0,-15000,0,0,0,0,,0.0,,,,2020-01-01,2021-03-04T05:06:07.123456,2021-03-04T05:06:07.123456Z,2021-03-04T05:06:07,2021-03-04T05:06:07"
	assert_equal "$(sed -n 3p "$DATA/types-300.csv")" \
		"1,-463,1,-14999,1,3,11,1000003,0.3333333333333333,0.14285715,false,name_1,7831,2020-01-02,2021-03-04T05:06:08.123456,2021-03-04T05:07:07.123456Z,2021-03-04T05:06:08,2021-03-04T05:06:08"
}

@test "fmt-inspect: the schema with logical types, row groups, codecs, encodings, sizes and statistics" {
	run fmt-inspect --schema "$DATA/types-v2-zstd.parquet"
	assert_success
	assert_output "$(printf 'schema (18 columns):\n  id  int32\n  big  int64\n  tiny  int8\n  small  int16\n  ut  uint8\n  us  uint16\n  ui  uint32\n  ub  uint64\n  dbl  float64\n  flt  float32\n  flag  bool\n  name  utf8\n  bin  binary\n  day  date32\n  ts  timestamp[us]\n  tstz  timestamp[us, UTC]\n  tsms  timestamp[ms]\n  tsns  timestamp[ns]')"
	run fmt-inspect --json "$DATA/types-v2-zstd.parquet"
	assert_success
	assert_equal "$(printf '%s' "$output" | jq -c '[.format, .rows, .parquet.version, .parquet.created_by, .parquet.row_group_count, .parquet.row_groups["0"].rows, .parquet.row_groups["1"].rows]')" \
		'["parquet",2100,2,"DuckDB version v1.5.6 (build 069cc9f9b5)",2,2048,52]'
	assert_equal "$(printf '%s' "$output" | jq -c '.parquet.row_groups["0"].columns.big')" \
		'{"codec":"ZSTD","encodings":"DELTA_BINARY_PACKED","values":2048,"compressed_bytes":254,"uncompressed_bytes":2775,"offset":53,"null_count":293,"min":-500,"max":499}'
	assert_equal "$(printf '%s' "$output" | jq -c '.parquet.row_groups["1"].columns.name | [.encodings, .null_count, .min, .max]')" \
		'["DELTA_LENGTH_BYTE_ARRAY",17,"name_0","name_9"]'
	assert_equal "$(printf '%s' "$output" | jq -r '.parquet.row_groups["0"].columns.dbl.encodings, .parquet.leaf_columns.tstz, .parquet.leaf_columns.ut')" \
		"$(printf 'BYTE_STREAM_SPLIT\nINT64 TIMESTAMP(us, UTC) (optional)\nINT32 INTEGER(8, unsigned) (optional)')"
	run fmt-inspect "$DATA/types-v1-snappy.parquet"
	assert_success
	assert_line "row_group_count: 1"
	assert_line "  id: INT32 INTEGER(32, signed) (optional)"
	assert_line "        codec: SNAPPY"
	assert_line "        encodings: PLAIN_DICTIONARY"
}

@test "fmt-inspect --head reads the first rows; fmt-verify decodes every page" {
	run fmt-inspect --json --head 2 "$DATA/types-v2-lz4raw.parquet"
	assert_success
	assert_equal "$(printf '%s' "$output" | jq -c '.head[1] | [.id, .big, .name, .flag, .tstz]')" '[1,-463,"name_1",false,"2021-03-04T05:07:07.123456Z"]'
	for f in "$DATA"/types-*.parquet; do
		run fmt-verify "$f"
		assert_success
	done
	run fmt-verify "$DATA/types-v2-zstd.parquet"
	assert_output "$DATA/types-v2-zstd.parquet: ok (parquet, 2100 rows)"
}

@test "from the specification: DELTA_BYTE_ARRAY, RLE booleans with nulls (page v2), FLOAT16, INT96, PLAIN_DICTIONARY" {
	run fmt-convert -q "$CASES/good.parquet" good.csv
	assert_success
	assert_equal "$(cat good.csv)" "$(printf '%s\n' 's,b,h,t,d' \
		'apple,true,1.0,1970-01-01T00:00:00,7' \
		'applesauce,,-2.0,2000-01-01T12:00:00.000000001,' \
		'apply,false,0.5,1969-12-31T00:00:00,9' \
		'banana,,65500.0,2022-01-08T00:00:00.000000001,7' \
		'band,true,-0.0,1970-01-02T00:00:00.000000999,7')"
	run fmt-inspect --schema "$CASES/good.parquet"
	assert_output "$(printf 'schema (5 columns):\n  s  utf8  not null\n  b  bool\n  h  float16  not null\n  t  timestamp[ns]  not null\n  d  int64')"
	run fmt-verify "$CASES/good.parquet"
	assert_success
	run fmt-inspect --json "$CASES/good.parquet"
	assert_equal "$(printf '%s' "$output" | jq -c '.schema.metadata')" '{"origin":"parquet-cases"}'
	# definition levels in the deprecated BIT_PACKED encoding of old parquet-mr files
	run fmt-convert -q "$CASES/old-levels.parquet" old.csv
	assert_success
	assert_equal "$(cat old.csv)" "$(printf 'v\n3\n\n5\n7\n')"
	run fmt-verify "$CASES/old-levels.parquet"
	assert_success
}

@test "hostile files: exact exit and message, nothing written" {
	mkdir out
	while IFS='|' read -r file code msg; do
		run --separate-stderr fmt-convert -q "$CASES/$file" out/out.csv
		[ "$status" -eq "$code" ] || fail "$file: exit $status: $stderr"
		assert_equal "$stderr" "fmt-convert: error: $CASES/$file: $msg"
		[ -z "$(ls -A out)" ] || fail "$file: left $(ls -A out)"
	done <<'EOF2'
bad-truncated.parquet|4|Parquet: no PAR1 magic at both ends (truncated?)
bad-footer-length.parquet|4|Parquet: footer length 586 does not fit the file (586 bytes)
bad-row-count.parquet|4|Parquet: the row groups hold 5 rows, the footer says 6
bad-chunk-offset.parquet|4|Parquet: column 's': chunk at 1099511627776 of 100 bytes is outside the file's data (322 bytes)
bad-dict-index.parquet|4|Parquet: column 'd': a dictionary index past the dictionary
bad-page-size.parquet|4|row group 0: Parquet: column 'h': a page runs past its column chunk
bad-few-values.parquet|4|row group 0: Parquet: column 't': the pages hold 2 values, the chunk says 5
bad-crc.parquet|6|row group 0: Parquet: column 'h': page CRC differs
bad-huge-page.parquet|4|row group 0: Parquet: column 't': pages hold more values than the chunk
bad-deep.parquet|4|Parquet: malformed footer (a field)
bad-huge-list.parquet|4|Parquet: malformed footer (schema list)
brotli.parquet|5|Parquet: codec BROTLI (4) is not supported (none, SNAPPY, GZIP, ZSTD, LZ4_RAW are)
EOF2
	# decoding refuses a page of more values than it reads (its levels are held whole)
	run --separate-stderr fmt-verify "$CASES/bad-huge-page.parquet"
	assert_failure 5
	assert_equal "$stderr" "fmt-verify: error: $CASES/bad-huge-page.parquet: row group 0: Parquet: column 't': a page of 33554432 values (at most 16777216 are read)"
	run --separate-stderr fmt-verify "$CASES/bad-dict-index.parquet"
	assert_failure 4
	assert_equal "$stderr" "fmt-verify: error: $CASES/bad-dict-index.parquet: row group 0: Parquet: column 'd': a dictionary index past the dictionary"
}

# fmt-inspect's report is the footer's: it read and checked every page first (a 101 MB file read
# whole to print its metadata). The pages are fmt-verify's, and --stats checks them before it
# reads the rows.
@test "fmt-inspect reads the footer only: damaged pages are shown; fmt-verify and --stats refuse them" {
	while IFS='|' read -r file code msg; do
		run --separate-stderr fmt-inspect --json "$CASES/$file"
		assert_success
		assert_equal "$stderr" ""
		assert_equal "$(jq -c '[.rows, .columns, .parquet.row_group_count]' <<<"$output")" "[5,5,1]"
		for cmd in "fmt-verify" "fmt-inspect --stats"; do
			run --separate-stderr $cmd "$CASES/$file"
			[ "$status" -eq "$code" ] || fail "$cmd $file: exit $status: $stderr"
			assert_equal "$stderr" "${cmd%% *}: error: $CASES/$file: row group 0: Parquet: column $msg"
		done
	done <<'EOF2'
bad-crc.parquet|6|'h': page CRC differs
bad-page-size.parquet|4|'h': a page runs past its column chunk
EOF2
}

@test "fmt-verify holds every value to its chunk's statistics (which --where skips row groups by) and to what a reader checks: exit 4 naming the row" {
	# true statistics of every kind of column (strings, booleans, FLOAT16, int64 with a null)
	run fmt-verify -T 1 "$CASES/stats.parquet"
	assert_success
	# byte-string bounds wider than the values, as a writer that truncates them writes: they hold
	run fmt-verify "$CASES/stats-bounds.parquet"
	assert_success
	for t in 1 2; do
		while IFS='|' read -r file msg; do
			run --separate-stderr fmt-verify -T "$t" "$CASES/$file"
			[ "$status" -eq 4 ] || fail "$file -T $t: exit $status: $stderr"
			assert_equal "$stderr" "fmt-verify: error: $CASES/$file: $msg"
		done <<'EOF2'
bad-stats-max.parquet|row group 0: Parquet: column 'd': row 2 holds 9, outside the statistics (min 7, max 8)
bad-stats-min.parquet|row group 0: Parquet: column 's': row 0 holds apple, outside the statistics (min applf, max band)
bad-stats-half.parquet|row group 0: Parquet: column 'h': row 3 holds 65500.0, outside the statistics (min -2.0, max 1.0)
bad-stats-nulls.parquet|row group 0: Parquet: column 'b': the pages hold 2 nulls, the statistics say 1
bad-stats-group.parquet|row group 1: Parquet: column 'd': row 7 holds 9, outside the statistics (min 7, max 8)
bad-utf8.parquet|row group 0: column 's': row 2 is not valid UTF-8
bad-utf8-group.parquet|row group 1: column 's': row 7 is not valid UTF-8
EOF2
	done
	# each value is checked as a reader checks it (a reader refuses the same file)
	run --separate-stderr fmt-convert -q "$CASES/bad-utf8.parquet" out.csv
	assert_failure 4
	assert_equal "$stderr" "fmt-convert: error: $CASES/bad-utf8.parquet: column 's': row 2 is not valid UTF-8"
	# the row named from the file's first, as fmt-verify names it, also when --where skipped
	# row group 0 by its statistics (bad-utf8-skipped: the same rows, group 1's bounds wider)
	for args in "-T 1 $CASES/bad-utf8-group.parquet" "-T 2 $CASES/bad-utf8-group.parquet" \
		"--where s<apple $CASES/bad-utf8-skipped.parquet" "-T 2 --where s<apple $CASES/bad-utf8-skipped.parquet"; do
		run --separate-stderr fmt-convert -q --force $args out.csv
		[ "$status" -eq 4 ] || fail "$args: exit $status: $stderr"
		assert_equal "$stderr" "fmt-convert: error: ${args##* }: column 's': row 7 is not valid UTF-8"
	done
	run fmt-convert -q --force --where 's < apple' "$CASES/stats.parquet" out.csv
	assert_success
	assert_equal "$(cat out.csv)" "s,b,h,t,d"
	run fmt-verify --json "$CASES/bad-stats-nulls.parquet"
	assert_failure 4
	assert_output --partial '"ok":false,"exit":4,"error":"InvalidFormat"'
	# why it matters: a reader that trusts the lying max skips the row group (as DuckDB does)
	run fmt-convert -q --where 'd > 8' "$CASES/stats.parquet" true.csv
	assert_success
	assert_equal "$(cat true.csv)" "$(printf 's,b,h,t,d\napply,false,0.5,1969-12-31T00:00:00,9')"
	run fmt-convert -q --where 'd > 8' "$CASES/bad-stats-max.parquet" lie.csv
	assert_success
	assert_equal "$(cat lie.csv)" "s,b,h,t,d"
}

@test "a list of strings: named, refused with exit 5 naming the column, taken when excluded; DuckDB's list column of one length is a fixed_size_list, its DECIMAL(10, 2) text" {
	run fmt-inspect --schema "$DATA/decimal-list.parquet"
	assert_output "$(printf 'schema (4 columns):\n  id  int32\n  price  utf8\n  pair  fixed_size_list<int64>[2]\n  tags  list  (not converted by fmtkit)')"
	run --separate-stderr fmt-convert "$DATA/decimal-list.parquet" o.csv
	assert_failure 5
	assert_equal "$stderr" "fmt-convert: error: $DATA/decimal-list.parquet: column 'tags' has type list, which fmtkit does not convert"
	[ ! -e o.csv ]
	run fmt-convert -q --exclude tags "$DATA/decimal-list.parquet" o.csv
	assert_success
	assert_equal "$(cat o.csv)" "$(printf 'id,price,pair\n0,0.00,"[0,1]"\n1,0.01,"[1,2]"\n2,0.02,"[2,3]"\n3,0.03,"[3,4]"\n4,0.04,"[4,5]"')"
	run fmt-convert -q --exclude 'p*' --exclude tags "$DATA/decimal-list.parquet" o2.csv
	assert_success
	assert_equal "$(cat o2.csv)" "$(printf 'id\n0\n1\n2\n3\n4')"
	# fmt-inspect shows the rows of the others, and says which columns it left out
	local left="fmt-inspect: warning: $DATA/decimal-list.parquet: 1 column of a type fmtkit does not convert left out: 'tags' (list)"
	run --separate-stderr fmt-inspect --head 2 "$DATA/decimal-list.parquet"
	assert_success
	assert_output "$(printf 'id  price  pair\n0   0.00   [0,1]\n1   0.01   [1,2]')"
	assert_equal "$stderr" "$left"
	run --separate-stderr fmt-inspect --json --stats "$DATA/decimal-list.parquet"
	assert_success
	assert_output --partial '"columns":[{"name":"id","type":"int32","count":5,"nulls":0,"min":0,"max":4,'
	run --separate-stderr fmt-inspect -q --head 2 "$DATA/decimal-list.parquet"
	assert_equal "$stderr" ""
}

@test "DECIMAL, TIME, UUID and INTERVAL read as utf8 text: DuckDB's file to exact CSV, JSON Lines and Arrow; the other writers' forms; statistics as text" {
	# DuckDB's values (tests/interop/parquet.test.mjs checks them against DuckDB's): DECIMAL on
	# INT32, INT64 and FIXED_LEN_BYTE_ARRAY(16) with the widest DECIMAL(38, 10), TIME in us with
	# 24:00:00, TIMETZ (UTC-adjusted: Z), TIME_NS, UUID, INTERVAL as an ISO 8601 duration
	run -0 fmt-inspect --schema "$DATA/logical.parquet"
	assert_output "$(printf 'schema (9 columns):\n  id  int32\n  d4  utf8\n  d18  utf8\n  d38  utf8\n  t  utf8\n  tz  utf8\n  tns  utf8\n  u  utf8\n  iv  utf8')"
	run -0 fmt-convert --to csv "$DATA/logical.parquet" -
	assert_output - <<'EOF2'
id,d4,d18,d38,t,tz,tns,u,iv
0,-50.0,-99999.000,9999999999999999999999999999.9999999999,00:00:00,05:06:07.500000Z,13:14:15.123456789,0badf00d-0000-4000-8000-fffffffffff0,PT0S
1,,1134568.891,-9999999999999999999999999999.9999999999,24:00:00,06:07:08.500000Z,13:14:15.123456789,0badf00d-0000-4000-8000-fffff1234567,
2,-25.3,2369136.782,,,07:08:09.500000Z,13:14:15.123456789,0badf00d-0000-4000-8000-fffff2469134,P1Y2M4DT2H4M6.008S
3,-13.0,3603704.673,-0.0000000003,23:59:56.999999,,13:14:15.123456789,0badf00d-0000-4000-8000-fffff3703701,P1Y9M6DT3H6M9.012S
4,-0.6,4838272.564,-0.0000000004,23:59:55.999999,09:10:11.500000Z,,0badf00d-0000-4000-8000-fffff4938268,P2Y4M8DT4H8M12.016S
5,11.7,6072840.455,-0.0000000005,23:59:54.999999,10:11:12.500000Z,13:14:15.123456789,,P2Y11M10DT5H10M15.020S
EOF2
	run -0 fmt-convert --to jsonl "$DATA/logical.parquet" -
	assert_line --index 1 '{"id":1,"d4":null,"d18":"1134568.891","d38":"-9999999999999999999999999999.9999999999","t":"24:00:00","tz":"06:07:08.500000Z","tns":"13:14:15.123456789","u":"0badf00d-0000-4000-8000-fffff1234567","iv":null}'
	fmt-convert -q "$DATA/logical.parquet" l.arrow
	run -0 fmt-inspect --schema l.arrow
	assert_line '  d38  utf8'
	fmt-convert -q l.arrow back.csv
	fmt-convert -q "$DATA/logical.parquet" want.csv
	cmp want.csv back.csv
	run -0 fmt-inspect --json "$DATA/logical.parquet"
	assert_equal "$(jq -c '.parquet.leaf_columns | [.d4, .d38, .tz, .tns, .u, .iv]' <<<"$output")" \
		'["INT32 DECIMAL(4, 1) (optional)","FIXED_LEN_BYTE_ARRAY DECIMAL(38, 10) (optional)","INT64 TIME(us, UTC) (optional)","INT64 TIME(ns) (optional)","FIXED_LEN_BYTE_ARRAY UUID (optional)","FIXED_LEN_BYTE_ARRAY INTERVAL (optional)"]'
	assert_equal "$(jq -c '.parquet.row_groups["0"].columns | [.d38.min, .d38.max, .t.max, .u.min]' <<<"$output")" \
		'["-9999999999999999999999999999.9999999999","9999999999999999999999999999.9999999999","24:00:00","0badf00d-0000-4000-8000-fffff1234567"]'
	run -0 fmt-verify "$DATA/logical.parquet"
	# what DuckDB does not write: DECIMAL on BYTE_ARRAY, from the ConvertedType alone, TIME in ms
	run -0 fmt-convert --to csv "$CASES/text-types.parquet" -
	assert_output "$(printf 'ba,cv,tms\n12345678901234567890123456.7890,123.45,00:00:00\n-0.0001,-0.05,12:34:56.789\n0.0000,0.00,24:00:00')"
	run -0 fmt-verify "$CASES/text-types.parquet"
}

@test "hostile DECIMAL, TIME, UUID and INTERVAL columns: exit 4 (or 5: a DECIMAL wider than fmtkit reads) naming the column, from fmt-convert, fmt-inspect and fmt-verify, nothing written" {
	mkdir out
	local tool
	while IFS='|' read -r file code msg; do
		for tool in fmt-convert fmt-inspect fmt-verify; do
			[ "$tool" = fmt-convert ] && set -- -q "$CASES/$file" out/out.csv || set -- "$CASES/$file"
			run --separate-stderr "$tool" "$@"
			msg2=$msg
			case $file:$tool in
			bad-*-value.*:fmt-inspect)  # a bad value: fmt-inspect's summary reads no rows
				[ "$status" -eq 0 ] || fail "$tool $file: exit $status: $stderr"
				continue ;;
			bad-*-value.*:fmt-verify) msg2="row group 0: $msg" ;;
			esac
			[ "$status" -eq "$code" ] || fail "$tool $file: exit $status: $stderr"
			assert_equal "$stderr" "$tool: error: $CASES/$file: $msg2"
		done
		[ -z "$(ls -A out)" ] || fail "$file: left $(ls -A out)"
	done <<'EOF2'
bad-decimal-precision.parquet|4|Parquet: column 'x': DECIMAL(10, 2) on INT32 (9 digits at most)
bad-decimal-scale.parquet|4|Parquet: column 'x': DECIMAL(4, 5) on INT64 (a scale from 0 to the precision)
bad-decimal-zero.parquet|4|Parquet: column 'x': DECIMAL(0, 0) on BYTE_ARRAY (a precision of 1 digit at least)
bad-decimal-double.parquet|4|Parquet: column 'x': DECIMAL(10, 2) on DOUBLE
bad-decimal-flba.parquet|4|Parquet: column 'x': DECIMAL(20, 0) on FIXED_LEN_BYTE_ARRAY(8) (18 digits at most)
decimal-wide.parquet|5|Parquet: column 'x': DECIMAL(80, 0) has over 76 digits (fmtkit reads decimals of up to 76)
bad-decimal-value.parquet|4|Parquet: column 'x': row 1 holds a DECIMAL(30, 0) value out of range
bad-time-unit.parquet|4|Parquet: column 'x': TIME(ms) on INT64 (TIME in ms is INT32, in us or ns INT64)
bad-time-value.parquet|4|Parquet: column 'x': row 1 holds a TIME(us) value out of range
bad-uuid.parquet|4|Parquet: column 'x': UUID on FIXED_LEN_BYTE_ARRAY(8) (FIXED_LEN_BYTE_ARRAY(16) expected)
bad-interval.parquet|4|Parquet: column 'x': INTERVAL on INT64 (FIXED_LEN_BYTE_ARRAY(12) expected)
EOF2
}

@test "writing: row groups of --row-group-rows, each codec, statistics, dictionary where it pays; CSV back byte for byte" {
	printf 'id,word,score,ok\n1,apple,0.5,true\n2,apple,-1.25,false\n3,pear,,true\n4,apple,7.0,\n5,fig,2.0,false\n' >in.csv
	for c in none snappy gzip zstd zstd:19 gzip:9 lz4; do
		run fmt-convert -q -c "$c" --row-group-rows 2 in.csv "o.parquet"
		assert_success
		run fmt-verify o.parquet
		assert_success
		fmt-convert -q o.parquet back.csv
		cmp in.csv back.csv || fail "$c"
		rm o.parquet back.csv
	done
	fmt-convert -q -c zstd --row-group-rows 2 in.csv o.parquet
	run fmt-inspect --json o.parquet
	assert_equal "$(printf '%s' "$output" | jq -c '[.parquet.row_group_count, [.parquet.row_groups[] | .rows], .parquet.row_groups["0"].columns.word.codec]')" '[3,[2,2,1],"ZSTD"]'
	assert_equal "$(printf '%s' "$output" | jq -c '[.parquet.row_groups[] | .columns.score | [.min, .max, .null_count]]')" \
		'[[-1.25,0.5,0],[7,7,1],[2,2,0]]'
	assert_equal "$(printf '%s' "$output" | jq -c '[.parquet.row_groups[] | .columns.word | [.min, .max]]')" \
		'[["apple","apple"],["apple","pear"],["fig","fig"]]'
	# a uint64 statistic above INT64_MAX: exact, a JSON string as every fmtkit uint64 beyond int64
	printf 'u\n18446744073709551615\n1\n' >u.csv
	fmt-convert -q u.csv u.parquet
	run fmt-inspect --json u.parquet
	assert_equal "$(printf '%s' "$output" | jq -c '.parquet.row_groups["0"].columns.u | [.min, .max]')" '[1,"18446744073709551615"]'
	run fmt-inspect u.parquet
	assert_line --regexp '^ +max: 18446744073709551615$'
	# a repeated word: dictionary-encoded; distinct integers: PLAIN
	seq 1 3000 | awk 'BEGIN { print "n,w" } { print $1 "," ($1 % 3 ? "often" : "sometimes") }' >big.csv
	fmt-convert -q big.csv big.parquet
	run fmt-inspect --json big.parquet
	assert_equal "$(printf '%s' "$output" | jq -r '.parquet.row_groups["0"].columns.w.encodings, .parquet.row_groups["0"].columns.n.encodings, .parquet.row_groups["0"].columns.w.codec')" \
		"$(printf 'PLAIN, RLE, RLE_DICTIONARY\nPLAIN, RLE\nSNAPPY')"
	fmt-convert -q big.parquet big2.csv
	cmp big.csv big2.csv
}

@test "writing: a number column held as dictionary indices only, put back as PLAIN where its dictionary is given up (mostly distinct after the first values; 1 MiB of entries; with nulls), at each -T: CSV back byte for byte, the same bytes" {
	# While a number column's dictionary is on, its values are held only as the dictionary and an
	# index a value, and counted as their PLAIN bytes; given up, they are written back as PLAIN
	# from the dictionary. h: each value twice, its dictionary full (1 MiB, 131072 entries) at
	# row 262144; d: distinct, given up after 4096 values; m: 3 values with nulls; q: every third
	# distinct with nulls.
	awk 'BEGIN { print "h,d,m,q"; for (r = 0; r < 300000; r++)
		printf "%d,%d,%s,%s\n", int(r / 2) - 7, r * 7, (r % 5 ? r % 3 - 1 : ""), (r % 9 ? int(r / 3) : "") }' >in.csv
	local t
	for t in 1 2 3; do
		fmt-convert -q -T $t --row-group-rows 1000000 --row-group-bytes 0 in.csv $t.parquet
		fmt-convert -q -f $t.parquet back.csv
		cmp in.csv back.csv
	done
	cmp 1.parquet 2.parquet
	cmp 1.parquet 3.parquet
	run -0 fmt-inspect --json 1.parquet
	assert_equal "$(jq -c '.parquet.row_groups["0"].columns | [.h, .d, .m, .q] | map([.encodings, .min, .max, .null_count])' <<<"$output")" \
		'[["PLAIN, RLE",-7,149992,0],["PLAIN, RLE",0,2099993,0],["PLAIN, RLE, RLE_DICTIONARY",-1,1,60000],["PLAIN, RLE, RLE_DICTIONARY",0,99999,33334]]'
	# the bound of bytes counts the indexed values as PLAIN: the same groups as before
	fmt-convert -q in.csv g.parquet
	run -0 fmt-inspect --json g.parquet
	assert_equal "$(jq -c '[.parquet.row_groups[] | .rows]' <<<"$output")" '[122880,122880,54240]'
	fmt-convert -q -f g.parquet back.csv
	cmp in.csv back.csv
}

@test "every column type fmtkit writes reads back the same (Parquet -> Parquet -> CSV)" {
	fmt-convert -q -c gzip --row-group-rows 700 "$DATA/types-v2-zstd.parquet" w.parquet
	fmt-convert -q w.parquet w.csv
	assert_equal "$(sha256sum <w.csv | cut -c1-64)" 7a6a0a6b319a99a12ae49367a98095d338265ac0f7f64fdcf12fae435edd2b57
	run fmt-inspect --schema w.parquet
	assert_equal "$output" "$(fmt-inspect --schema "$DATA/types-v2-zstd.parquet")"
	fmt-convert -q "$CASES/good.parquet" g.parquet
	fmt-convert -q g.parquet g.csv
	fmt-convert -q "$CASES/good.parquet" want.csv
	cmp g.csv want.csv
}

@test "the .ald card travels through Parquet's key/value metadata and back" {
	printf 'id,name\n1,a\n2,b\n' >in.csv
	printf '{"name":"demo","version":"1.0","license":"MIT","tags":["x","y"]}' >card.json
	fmt-convert -q --card card.json in.csv in.ald
	fmt-convert -q in.ald c.parquet
	run fmt-inspect --json c.parquet
	assert_equal "$(printf '%s' "$output" | jq -r '.schema.metadata["ald:card"]')" '{"name":"demo","version":"1.0","license":"MIT","tags":["x","y"]}'
	fmt-convert -q c.parquet back.ald
	run fmt-inspect --json back.ald
	assert_equal "$(printf '%s' "$output" | jq -c '.ald.card | del(.sha256)')" '{"name":"demo","version":"1.0","license":"MIT","tags":["x","y"]}'
}

@test "--head reads only the first row group: a damaged later one does not stop it, a conversion stops there" {
	seq 1 40 | awk 'BEGIN { print "n,s" } { print $1 ",word" $1 }' >in.csv
	fmt-convert -q -c snappy --row-group-rows 20 in.csv o.parquet
	off=$(fmt-inspect --json o.parquet | jq '.parquet.row_groups["1"].columns.s.offset')
	# a byte of the second row group's string page (its header is about 30 bytes)
	printf '\377' | dd of=o.parquet bs=1 seek=$((off + 40)) conv=notrunc status=none
	run fmt-inspect --json --head 3 o.parquet
	assert_success
	assert_equal "$(printf '%s' "$output" | jq -c '.head')" '[{"n":1,"s":"word1"},{"n":2,"s":"word2"},{"n":3,"s":"word3"}]'
	run --separate-stderr fmt-convert o.parquet out.csv
	assert_failure 6
	assert_equal "$stderr" "fmt-convert: error: o.parquet: row group 1: Parquet: column 's': page CRC differs"
	[ ! -e out.csv ]
}

@test "usage: -c and --row-group-rows values, and --row-group-rows without Parquet output (exit 2, nothing written)" {
	printf 'a\n1\n' >in.csv
	run --separate-stderr fmt-convert -c brotli in.csv o.parquet
	assert_failure 2
	assert_equal "${stderr_lines[0]}" "fmt-convert: error: --compression takes none, snappy (default), gzip[:1-9], zstd[:1-22], zstd-max or lz4 for Parquet"
	run --separate-stderr fmt-convert -c zstd:23 in.csv o.parquet
	assert_failure 2
	run --separate-stderr fmt-convert -c snappy:3 in.csv o.parquet
	assert_failure 2
	run --separate-stderr fmt-convert --row-group-rows 0 in.csv o.parquet
	assert_failure 2
	assert_equal "${stderr_lines[0]}" "fmt-convert: error: --row-group-rows takes a row count from 1 to 2147483647"
	run --separate-stderr fmt-convert --row-group-rows 5 in.csv o.csv
	assert_failure 2
	assert_equal "${stderr_lines[0]}" "fmt-convert: error: in.csv: --row-group-rows has no use with csv input and csv output (it is for parquet output)"
	[ ! -e o.parquet ] && [ ! -e o.csv ]
	# .ald keeps its own codecs
	run --separate-stderr fmt-convert -c snappy in.csv o.ald
	assert_failure 2
	assert_equal "${stderr_lines[0]}" "fmt-convert: error: --compression takes none, zstd, zstd-max or lz4 for a dataset"
}

@test "column selection reads only the selected columns: a damaged page of an excluded one is never decoded" {
	seq 1 40 | awk 'BEGIN { print "n,s" } { print $1 ",word" $1 }' >in.csv
	fmt-convert -q -c none in.csv o.parquet
	# the length of the first PLAIN string (5, "word1") made 0xff...: that page cannot be decoded
	off=$(grep -obUaP '\x05\x00\x00\x00word1' o.parquet | head -n 1 | cut -d: -f1)
	printf '\377' | dd of=o.parquet bs=1 seek="$off" conv=notrunc status=none
	run fmt-convert -q --no-verify --exclude s o.parquet n.csv
	assert_success
	assert_equal "$(cat n.csv)" "$(seq 0 40 | sed '1s/.*/n/')"
	run --separate-stderr fmt-convert --no-verify o.parquet all.csv
	assert_failure 4
	assert_equal "$stderr" "fmt-convert: error: o.parquet: Parquet: column 's': a PLAIN byte array runs past the page"
	# checked before reading (the page's CRC), whatever the selection
	run --separate-stderr fmt-convert --exclude s o.parquet n2.csv
	assert_failure 6
	assert_equal "$stderr" "fmt-convert: error: o.parquet: row group 0: Parquet: column 's': page CRC differs"
	[ ! -e all.csv ] && [ ! -e n2.csv ]
}

# A CSV of 1000 rows in row groups of 250 (ids 0-249, 250-499, ...): ints narrowed by --schema,
# floats with NaN and -0, text and timestamps with nulls in one group only.
stats_csv() {
	awk 'BEGIN { print "id,x,s,f,d,t,u,v"
		for (i = 0; i < 1000; i++) {
			x = (i >= 750 && i % 50 == 0) ? "NaN" : (i == 300 ? "-0.0" : (i % 7) + 0.5 + (i >= 500 ? 10 : 0))
			s = (i >= 250 && i < 500 && i % 3 == 0) ? "" : sprintf("s%04d", i)
			t = (i < 250 && i % 10 == 0) ? "" : sprintf("2024-01-%02dT%02d:00:00", 1 + int(i / 40), i % 24)
			printf "%d,%s,%s,%s,2020-%02d-01,%s,%d,%d\n", i, x, s, (i < 500 ? "false" : (i % 2 ? "true" : "false")), 1 + int(i / 100), t, int(i / 8) - 60, i % 9
		} }' >in.csv
	printf '{"u": "int8", "v": "uint32", "d": "date32"}' >schema.json
	fmt-convert -q --schema schema.json in.csv in2.csv
	fmt-convert -q --row-group-rows 250 --schema schema.json in.csv o.parquet
}

@test "--where skips row groups by their statistics: the rows are those of the same --where on the CSV" {
	stats_csv
	run fmt-inspect --json o.parquet
	assert_output --partial '"row_group_count":4'
	for w in 'id < 250' 'id <= 249' 'id = 500' 'id != 5' 'id > 749' 'id >= 750' 'id > 999' \
		'x < 0.5' 'x <= 0' 'x = 0' 'x = 10.5' 'x > 16' 'x >= 16.5' 'x != 3.5' 'x is null' \
		's = s0500' 's < s0100' 's > s0900' 's is null' 's is not null' 'f = true' 'f != false' \
		'd >= 2020-09-01' 'd < 2020-02-01' 't < 2024-01-02T00:00:00' 't is null' 't is not null' \
		'u > 60' 'u <= -60' 'u = 0' 'v = 7' 'v > 8'; do
		fmt-convert -q -f --where "$w" in2.csv want.csv
		fmt-convert -q -f --where "$w" o.parquet got.csv
		cmp want.csv got.csv || fail "--where '$w' differs"
	done
	run fmt-convert -q -f --where 'id >= 250' --where 'id < 500' --where 's is null' o.parquet got.csv
	assert_success
	assert_equal "$(wc -l <got.csv)" 84
}

@test "--where: a row group the statistics exclude is never read (its damaged pages do not matter)" {
	stats_csv
	# every column chunk of row group 1 (ids 250-499) starts with a broken page header
	/usr/bin/python3 -c '
import json, subprocess
d = json.loads(subprocess.check_output(["fmt-inspect", "--json", "o.parquet"]))
b = bytearray(open("o.parquet", "rb").read())
for c in d["parquet"]["row_groups"]["1"]["columns"].values():
    b[c["offset"]:c["offset"] + 6] = b"\xff" * 6
open("bad.parquet", "wb").write(b)'
	run --separate-stderr fmt-convert --no-verify bad.parquet all.csv
	assert_failure 4
	assert_equal "$stderr" "fmt-convert: error: bad.parquet: Parquet: column 'id': malformed page header"
	nothing_written all.csv
	for w in 'id < 250' 'id >= 500' 's > s0700' 'u > 40' 'd >= 2020-06-01' 't is null'; do
		fmt-convert -q -f --where "$w" in2.csv want.csv
		run fmt-convert -q -f --no-verify --where "$w" bad.parquet got.csv
		assert_success
		cmp want.csv got.csv || fail "--where '$w' differs"
	done
	# a test the statistics cannot decide reads the group
	run --separate-stderr fmt-convert -f --no-verify --where 'id != 7' bad.parquet got.csv
	assert_failure 4
	# floats: NaN is above every number and not in the statistics, so > never skips
	run --separate-stderr fmt-convert -f --no-verify --where 'x > 100' bad.parquet got.csv
	assert_failure 4
	# the check before reading still sees the damage
	run --separate-stderr fmt-convert -f --where 'id < 250' bad.parquet got2.csv
	assert_failure 4
	assert_equal "$stderr" "fmt-convert: error: bad.parquet: row group 1: Parquet: column 'id': malformed page header"
	nothing_written got2.csv
}

@test "--where with --include on Parquet (the selection under the row view) reads the right columns" {
	stats_csv
	run fmt-convert -q --where 'id < 3' --include s o.parquet sel.csv
	assert_success
	assert_equal "$(cat sel.csv)" "$(printf 's\ns0000\ns0001\ns0002')"
}

@test "fmt-inspect --json: a float column statistic that is NaN or infinite is \"nan\", \"inf\" (fmtkit(7)); it was left out" {
	printf 'x\n1.5\n2.5\n' >f.csv
	fmt-convert -q -c none f.csv f.parquet
	# the footer's statistics (the last copies of the two doubles): min NaN, max +inf
	/usr/bin/python3 -c '
import struct, sys
d = bytearray(open("f.parquet", "rb").read())
for old, new in ((2.5, float("inf")), (1.5, float("nan"))):
    i = d.rfind(struct.pack("<d", old))
    d[i:i + 8] = struct.pack("<d", new)
open("g.parquet", "wb").write(d)'
	run fmt-inspect --json g.parquet
	assert_success
	assert_equal "$(jq -c '.parquet.row_groups["0"].columns.x | [.null_count, .min, .max]' <<<"$output")" '[0,"nan","inf"]'
	assert_output --partial '"null_count":0,"min":"nan","max":"inf"}'
}

@test "a timestamp's zone name travels through Parquet (ARROW:schema, as pyarrow keeps it) and back" {
	printf 'id,t\n1,2024-03-01T12:00:00+01:00\n2,\n3,1999-12-31T23:59:59.5Z\n' >z.csv
	printf '{"t": "timestamp[ms, Europe/Paris]"}' >zs.json
	fmt-convert -q --schema zs.json z.csv z.arrow
	fmt-convert -q z.arrow z.parquet
	run fmt-inspect z.parquet
	assert_success
	assert_line "  t  timestamp[ms, Europe/Paris]"
	run fmt-inspect --json z.parquet
	assert_output --partial '"timezone":"Europe/Paris"'
	assert_output --partial '"metadata":{}'
	assert_output --partial '"t":"INT64 TIMESTAMP(ms, UTC) (optional)"'
	for to in arrow ald; do
		fmt-convert -q z.parquet "back.$to"
		run fmt-inspect "back.$to"
		assert_line "  t  timestamp[ms, Europe/Paris]"
	done
	fmt-convert -q z.parquet back.jsonl
	fmt-convert -q z.arrow want.jsonl
	cmp want.jsonl back.jsonl
	assert_equal "$(sed -n 1p back.jsonl)" '{"id":1,"t":"2024-03-01T11:00:00Z"}'
	# Parquet to Parquet keeps it (one ARROW:schema, the new one)
	fmt-convert -q z.parquet again.parquet
	run fmt-inspect again.parquet
	assert_line "  t  timestamp[ms, Europe/Paris]"
	assert_equal "$(grep -c -a 'ARROW:schema' again.parquet)" 1
	# UTC needs none: the file has no ARROW:schema
	fmt-convert -q z.csv utc.parquet
	run fmt-inspect utc.parquet
	assert_line "  t  timestamp[ms, UTC]"
	! grep -q -a 'ARROW:schema' utc.parquet
}

@test "a damaged ARROW:schema is ignored: the instants read as UTC, as without it" {
	printf 'id,t\n1,2024-03-01T12:00:00+01:00\n' >z.csv
	printf '{"t": "timestamp[us, +05:30]"}' >zs.json
	fmt-convert -q --schema zs.json z.csv z.parquet
	run fmt-inspect z.parquet
	assert_line "  t  timestamp[us, +05:30]  not null"
	# its Base64 made invalid (same length), then valid Base64 of bytes that are no schema
	/usr/bin/python3 -c '
import base64, re, sys
b = open("z.parquet", "rb").read()
m = re.search(rb"ARROW:schema\x18([\x80-\xff]*[\x00-\x7f])", b)
at = m.end()
n = len(b[at:].split(b"\x00")[0])
open("bad1.parquet", "wb").write(b[:at] + b"!" * 8 + b[at + 8:])
junk = base64.b64encode(b"\xff\xff\xff\xff\x08\x00\x00\x00" + b"\x01" * 200)[:n]
open("bad2.parquet", "wb").write(b[:at] + junk + b"A" * (n - len(junk)) + b[at + n:])'
	for f in bad1 bad2; do
		run fmt-inspect "$f.parquet"
		assert_success
		assert_line "  t  timestamp[us, UTC]  not null"
		fmt-convert -q "$f.parquet" "$f.jsonl"
		assert_equal "$(cat "$f.jsonl")" '{"id":1,"t":"2024-03-01T11:00:00Z"}'
	done
}

@test "pages larger than what is read ahead, and many small ones, read back byte for byte at every -T" {
	# strings of 100000 to 300000 bytes (pages far past the 64 KiB read ahead and 4 KiB header
	# guess), then 30000 short rows in row groups of 7000 (pages of one chunk read together)
	/usr/bin/python3 -c '
import random
r = random.Random(5)
with open("big.csv", "w") as f:
    f.write("id,s,x\n")
    for i in range(6):
        f.write("%d,%s,%d.5\n" % (i, "".join(r.choice("abcdefgh") for _ in range(100000 * (1 + i % 3))), i))
with open("many.csv", "w") as f:
    f.write("id,s,x\n")
    for i in range(30000):
        f.write("%d,w%d,%d.25\n" % (i, r.randrange(10 ** 6), i % 97))'
	for c in none snappy zstd; do
		fmt-convert -q -c "$c" big.csv "big-$c.parquet"
		fmt-convert -q -c "$c" --row-group-rows 7000 many.csv "many-$c.parquet"
		for t in 1 2 3; do
			fmt-convert -q -T "$t" "big-$c.parquet" "big-$c-$t.csv"
			cmp big.csv "big-$c-$t.csv" || fail "big $c -T $t"
			fmt-convert -q -T "$t" "many-$c.parquet" "many-$c-$t.csv"
			cmp many.csv "many-$c-$t.csv" || fail "many $c -T $t"
		done
		run fmt-verify "big-$c.parquet"
		assert_success
	done
	run fmt-inspect --head 2 big-none.parquet
	assert_success
	assert_equal "$(fmt-inspect --json --head 1 many-snappy.parquet | jq -c '.head')" '[{"id":0,"s":"w'"$(sed -n 2p many.csv | cut -d, -f2 | cut -c2-)"'","x":0.25}]'
}

@test "a damaged page: the first damaged row group is told at every -T (CRC before anything is written, or the page itself without it)" {
	/usr/bin/python3 -c '
with open("rows.csv", "w") as f:
    f.write("id,s\n")
    for i in range(30000):
        f.write("%d,v%d\n" % (i, i * 7919 % 100003))'
	fmt-convert -q --row-group-rows 2000 rows.csv rows.parquet
	# the middle byte of column s's chunk in row groups 3 and 9 flipped
	off3=$(fmt-inspect --json rows.parquet | jq '.parquet.row_groups["3"].columns.s | .offset + (.compressed_bytes / 2 | floor)')
	off9=$(fmt-inspect --json rows.parquet | jq '.parquet.row_groups["9"].columns.s | .offset + (.compressed_bytes / 2 | floor)')
	/usr/bin/python3 -c '
import sys
b = bytearray(open("rows.parquet", "rb").read())
for o in sys.argv[1:]:
    b[int(o)] ^= 0xff
open("bad.parquet", "wb").write(b)' "$off3" "$off9"
	for t in 1 2 3; do
		run fmt-convert -q -T "$t" bad.parquet out.csv
		assert_failure 6
		assert_output "fmt-convert: error: bad.parquet: row group 3: Parquet: column 's': page CRC differs"
		[ ! -e out.csv ]
		run fmt-verify -T "$t" bad.parquet
		assert_failure 6
		assert_output "fmt-verify: error: bad.parquet: row group 3: Parquet: column 's': page CRC differs"
		fmt-convert -q -T "$t" rows.parquet "rows-$t.csv"
		cmp rows.csv "rows-$t.csv"
	done
	for t in 1 2 3; do
		run fmt-convert -q -T "$t" --no-verify bad.parquet out.csv
		assert_failure 4
		assert_output "fmt-convert: error: bad.parquet: Parquet: column 's': a SNAPPY page is malformed"
		[ ! -e out.csv ]
	done
}

@test "the first timestamp of a unit as text: INT64_MIN microseconds (a row of a fuzzed DuckDB file)" {
	# timestamp-int64-min.parquet: row 98 of what fuzz_driver made of types-v1-none.parquet, taken
	# with --where 'id = 98'; its seconds times 10^6 do not fit in an int64 (UBSan caught the
	# fraction computed from them; make asan runs this test under it)
	run fmt-convert -q "$DATA/timestamp-int64-min.parquet" t.csv
	assert_success
	assert_equal "$(cat t.csv)" "id,tstz
98,-290308-12-21T19:59:05.224192Z"
	run fmt-inspect --head 1 --json "$DATA/timestamp-int64-min.parquet"
	assert_success
	assert_output --partial '"head":[{"id":98,"tstz":"-290308-12-21T19:59:05.224192Z"}]'
	run fmt-inspect "$DATA/timestamp-int64-min.parquet"
	assert_success
	assert_output --partial "max: -9223372036854775808"
}

@test "list columns of one length (DuckDB's FLOAT[4], FLOAT[], INTEGER[] with a null row and a null element, DOUBLE[]) read as fixed_size_list, v1 and v2 pages, at every -T" {
	local want
	want=$(printf '%s\n' '{"id":0,"emb":[0.0,0.5,0.0,1.25],"f":[0.0,2.5],"l":[0,0,7],"d":[0.0,0.0]}' \
		'{"id":1,"emb":[1.0,1.5,-1.0,1.25],"f":[0.25,2.5],"l":[1,10,7],"d":[1.5,-1.0]}' \
		'{"id":2,"emb":[2.0,2.5,-2.0,1.25],"f":[0.5,2.5],"l":null,"d":[3.0,-2.0]}' \
		'{"id":3,"emb":[3.0,3.5,-3.0,1.25],"f":[0.75,2.5],"l":[3,null,7],"d":[4.5,-3.0]}' \
		'{"id":4,"emb":[4.0,4.5,-4.0,1.25],"f":[1.0,2.5],"l":[4,40,7],"d":[6.0,-4.0]}')
	for f in lists-v1 lists-v2; do
		run fmt-inspect --schema "$DATA/$f.parquet"
		assert_output "$(printf 'schema (5 columns):\n  id  int32\n  emb  fixed_size_list<float32>[4]\n  f  fixed_size_list<float32>[2]\n  l  fixed_size_list<int32>[3]\n  d  fixed_size_list<float64>[2]')"
		for t in 1 2 3; do
			run fmt-convert -q -T "$t" --to jsonl "$DATA/$f.parquet" -
			assert_success
			assert_output "$want"
		done
		run fmt-verify "$DATA/$f.parquet"
		assert_output "$DATA/$f.parquet: ok (parquet, 5 rows)"
		run fmt-inspect --head 2 "$DATA/$f.parquet"
		assert_output "$(printf '%s\n' 'id  emb                  f           l         d' '0   [0.0,0.5,0.0,1.25]   [0.0,2.5]   [0,0,7]   [0.0,0.0]' \
			'1   [1.0,1.5,-1.0,1.25]  [0.25,2.5]  [1,10,7]  [1.5,-1.0]')"
	done
	fmt-convert -q "$DATA/lists-v1.parquet" o.csv
	assert_equal "$(sed -n 4,5p o.csv)" "$(printf '%s\n' '2,"[2.0,2.5,-2.0,1.25]","[0.5,2.5]",,"[3.0,-2.0]"' '3,"[3.0,3.5,-3.0,1.25]","[0.75,2.5]","[3,null,7]","[4.5,-3.0]"')"
	run fmt-inspect --json "$DATA/lists-v2.parquet"
	assert_equal "$(printf '%s' "$output" | jq -c '.schema.fields[3], .parquet.leaf_columns["l.list.element"]')" \
		"$(printf '%s\n' '{"name":"l","type":"fixed_size_list","nullable":true,"element":"int32","list_size":3}' '"INT32 INTEGER(32, signed) (repeated)"')"
}

@test "lists from the specification: three levels with a row that runs on from one v1 page to the next, a top-level repeated int32 (v2 page), a LIST of a repeated int64" {
	run fmt-inspect --schema "$CASES/list-good.parquet"
	assert_output "$(printf 'schema (3 columns):\n  emb  fixed_size_list<float32>[3]\n  r  fixed_size_list<int32>[2]  not null\n  p  fixed_size_list<int64>[2]  not null')"
	for t in 1 3; do
		run fmt-convert -q -T "$t" --to jsonl "$CASES/list-good.parquet" -
		assert_success
		assert_output "$(printf '%s\n' '{"emb":[1.0,2.0,3.0],"r":[0,0],"p":[0,1]}' '{"emb":null,"r":[1,-1],"p":[100,101]}' \
			'{"emb":[4.0,null,6.0],"r":[2,-2],"p":[200,201]}' '{"emb":[7.0,8.0,9.0],"r":[3,-3],"p":[300,301]}' \
			'{"emb":[10.0,11.0,12.0],"r":[4,-4],"p":[400,401]}' '{"emb":[-0.5,0.25,1000000.0],"r":[5,-5],"p":[500,501]}')"
	done
	run fmt-verify "$CASES/list-good.parquet"
	assert_success
	# --head 1 stops inside the first page
	run fmt-inspect --head 1 "$CASES/list-good.parquet"
	assert_output "$(printf 'emb            r      p\n[1.0,2.0,3.0]  [0,0]  [0,1]')"
}

@test "leaf column paths past 1 KiB are whole (they were cut at 1,023 bytes): two struct leaves that differ only at their end are two describe keys; a list's and a flat column's names whole in the CSV header" {
	local n l f
	n=$(printf 'n%.0s' {1..1100}) l=$(printf 'l%.0s' {1..1100}) f=$(printf 'f%.0s' {1..1099})F
	cp "$CASES/long-paths.parquet" .
	run --separate-stderr fmt-inspect --json long-paths.parquet
	assert_success
	assert_equal "$output" '{"file":"long-paths.parquet","format":"parquet","rows":2,"columns":3,"schema":{"fields":[{"name":"'$n'","type":"struct","nullable":true},{"name":"'$l'","type":"fixed_size_list","nullable":true,"element":"int32","list_size":2},{"name":"'$f'","type":"int64","nullable":false}],"metadata":{}},"parquet":{"version":1,"created_by":"parquet-cases","footer_bytes":7932,"row_group_count":1,"leaf_columns":{"'$n'.x":"INT64","'$n'.y":"INT64","'$l'.list.element":"INT32 (repeated)","'$f'":"INT64"},"row_groups":{"0":{"rows":2,"bytes":169,"columns":{"'$n'.x":{"codec":"UNCOMPRESSED","encodings":"PLAIN","values":2,"compressed_bytes":39,"uncompressed_bytes":39,"offset":4},"'$n'.y":{"codec":"UNCOMPRESSED","encodings":"PLAIN","values":2,"compressed_bytes":39,"uncompressed_bytes":39,"offset":43},"'$l'.list.element":{"codec":"UNCOMPRESSED","encodings":"PLAIN, RLE","values":4,"compressed_bytes":52,"uncompressed_bytes":52,"offset":82},"'$f'":{"codec":"UNCOMPRESSED","encodings":"PLAIN","values":2,"compressed_bytes":39,"uncompressed_bytes":39,"offset":134}}}}}}'
	assert_equal "$stderr" ""
	run fmt-convert -q --exclude 'n*' --to csv long-paths.parquet -
	assert_success
	assert_output "$(printf '%s\n' "$l,$f" '"[1,2]",5' '"[3,4]",6')"
	run fmt-verify long-paths.parquet
	assert_output "long-paths.parquet: ok (parquet, 2 rows)"
	# fmtkit's writer: a list column and two flat ones, names of 1,501 bytes the same up to the last
	local a
	a=$(printf 'a%.0s' {1..1500})
	printf '{"%s":[1.5,2.5],"%s":1,"%s":2}\n' "${a}L" "${a}x" "${a}y" >in.jsonl
	fmt-convert -q in.jsonl w.parquet
	run fmt-inspect --json w.parquet
	assert_equal "$(jq -c '.parquet.leaf_columns' <<<"$output")" '{"'$a'L.list.element":"DOUBLE (repeated)","'$a'x":"INT64","'$a'y":"INT64"}'
	assert_equal "$(jq -c '.parquet.row_groups["0"].columns | map_values(.values)' <<<"$output")" '{"'$a'L.list.element":2,"'$a'x":1,"'$a'y":1}'
	run fmt-convert -q --to csv w.parquet -
	assert_output "$(printf '%s\n' "${a}L,${a}x,${a}y" '"[1.5,2.5]",1,2')"
}

@test "list rows of another length or empty: exit 5 naming the column and the row, nothing written; null and empty rows only: not converted, taken when excluded" {
	mkdir out
	while IFS='|' read -r file msg; do
		for tool in fmt-convert fmt-verify; do
			local args=("$CASES/$file")
			[ $tool = fmt-verify ] || args+=(out/o.jsonl)
			run --separate-stderr $tool -q "${args[@]}"
			[ "$status" -eq 5 ] || fail "$tool $file: exit $status: $stderr"
			assert_equal "$stderr" "$tool: error: $CASES/$file: ${msg/@/$([ $tool = fmt-verify ] && echo 'row group 0: ')}"
		done
		[ -z "$(ls -A out)" ] || fail "$file: left $(ls -A out)"
	done <<'EOF2'
list-lengths.parquet|@column 'l': row 2 has 2 values, the rows before it 3 (fmtkit converts lists of one length)
list-empty.parquet|@column 'l': row 1 has 0 values, the rows before it 2 (fmtkit converts lists of one length)
list-empty-first.parquet|@column 'l': row 0 has 0 values, row 1 has 2 (fmtkit converts lists of one length)
EOF2
	run fmt-inspect --schema "$CASES/list-null-empty.parquet"
	assert_output "$(printf 'schema (1 column):\n  l  list<int32> of null and empty rows  (not converted by fmtkit)')"
	run --separate-stderr fmt-convert -q "$CASES/list-null-empty.parquet" out/o.jsonl
	assert_failure 5
	assert_equal "$stderr" "fmt-convert: error: $CASES/list-null-empty.parquet: column 'l' has type list<int32> of null and empty rows, which fmtkit does not convert"
	# DuckDB's lists file with its INTEGER[] column left out reads the others
	run fmt-convert -q --exclude l --to jsonl "$DATA/lists-v1.parquet" -
	assert_line --index 0 '{"id":0,"emb":[0.0,0.5,0.0,1.25],"f":[0.0,2.5],"d":[0.0,0.0]}'
}

@test "hostile list levels: exact exit 4 and message from fmt-convert and fmt-verify, nothing written" {
	mkdir out
	while IFS='|' read -r file msg; do
		for tool in fmt-convert fmt-verify; do
			local args=("$CASES/$file")
			[ $tool = fmt-verify ] || args+=(out/o.csv)
			run --separate-stderr $tool -q "${args[@]}"
			[ "$status" -eq 4 ] || fail "$tool $file: exit $status: $stderr"
			# @: "row group 0: " where fmt-verify names it (the reader finds these as it reads)
			assert_equal "$stderr" "$tool: error: $CASES/$file: ${msg/@/$([ $tool = fmt-verify ] && echo 'row group 0: ')}"
		done
		[ -z "$(ls -A out)" ] || fail "$file: left $(ls -A out)"
	done <<'EOF2'
bad-list-rep2.parquet|Parquet: column 'l.list.element': malformed repetition levels
bad-list-few-levels.parquet|Parquet: column 'l.list.element': malformed repetition levels
bad-list-first-rep.parquet|Parquet: column 'l.list.element': a repetition level of 1 at the start of the column chunk
bad-list-null-continued.parquet|@Parquet: column 'l.list.element': a repetition level of 1 in a null or empty list
bad-list-rows.parquet|@Parquet: column 'l.list.element': the chunk holds more rows than its row group's 2
bad-list-count.parquet|row group 0: Parquet: column 'l.list.element': the pages hold 4 values, the chunk says 5
EOF2
}

@test "ARROW:schema's fixed_size_list gives the list size: rows of nulls only are read, a row of another length is refused naming it" {
	printf '{"l":[1.5,2]}\n{"l":[3,4]}\n' >a.jsonl
	fmt-convert -q a.jsonl a.parquet
	"$REPO_ROOT/scripts/gen/parquet-cases" --arrow-from a.parquet .
	run fmt-inspect --schema list-arrow-nulls.parquet
	assert_output "$(printf 'schema (1 column):\n  l  fixed_size_list<float64>[2]')"
	run fmt-convert -q --to jsonl list-arrow-nulls.parquet -
	assert_success
	assert_output "$(printf '{"l":null}\n{"l":null}')"
	run --separate-stderr fmt-convert -q list-arrow-3.parquet o.jsonl
	assert_failure 5
	assert_equal "$stderr" "fmt-convert: error: list-arrow-3.parquet: column 'l': row 0 has 3 values, ARROW:schema's fixed_size_list 2 (fmtkit converts lists of one length)"
	[ ! -e o.jsonl ]
}

@test "writing fixed_size_list columns: the standard 3-level LIST with ARROW:schema; .ald -> Parquet -> .ald gives the same values (null rows, null elements, pages and row groups), in each codec" {
	fmt-convert -q "$DATA/lists-v1.parquet" src.ald
	fmt-convert -q --to jsonl src.ald want.jsonl
	for c in none snappy zstd; do
		run fmt-convert -q -c "$c" --row-group-rows 2 src.ald "o-$c.parquet"
		assert_success
		run fmt-verify "o-$c.parquet"
		assert_success
		fmt-convert -q "o-$c.parquet" "back-$c.ald"
		fmt-convert -q --to jsonl "back-$c.ald" "back-$c.jsonl"
		cmp want.jsonl "back-$c.jsonl" || fail "$c"
		assert_equal "$(fmt-inspect --schema "back-$c.ald")" "$(fmt-inspect --schema src.ald)"
	done
	run fmt-inspect --json o-none.parquet
	assert_equal "$(printf '%s' "$output" | jq -c '[.parquet.row_group_count, .parquet.leaf_columns["l.list.element"], .parquet.row_groups["1"].columns["l.list.element"].values, .schema.metadata]')" \
		'[3,"INT32 (repeated)",4,{}]'
	assert_equal "$(grep -c -a 'ARROW:schema' o-none.parquet)" 1
	# many rows: pages of whole rows, several row groups, a required list (JSON Lines' lists)
	/usr/bin/python3 -c '
for i in range(30000):
    print("{\"id\":%d,\"v\":[%d.5,%d,-1.25]}" % (i, i, -i))' >big.jsonl
	fmt-convert -q big.jsonl big.ald
	fmt-convert -q --row-group-rows 12000 big.ald big.parquet
	run fmt-inspect --json big.parquet
	assert_equal "$(printf '%s' "$output" | jq -c '[.parquet.row_group_count, .parquet.leaf_columns["v.list.element"], .schema.fields[1].nullable]')" '[3,"DOUBLE (repeated)",false]'
	fmt-convert -q --to jsonl big.parquet back.jsonl
	fmt-convert -q --to jsonl big.ald want-big.jsonl
	cmp want-big.jsonl back.jsonl
	assert_equal "$(sed -n 29999p back.jsonl)" '{"id":29998,"v":[29998.5,-29998.0,-1.25]}'
}
