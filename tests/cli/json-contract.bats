#!/usr/bin/env bats
# The --json contract of CONVENTIONS.md, for every tool: every line on stdout and on stderr is
# one JSON object; each input gets exactly one record on stdout, {"file","ok":false,"exit",
# "error","message"} when it failed; stderr carries {"tool","level","file","error","exit",
# "message"} objects and nothing else; the exit status is the highest over the inputs. A command
# line the tool refuses (exit 2 before any input) gives no record, and its error is JSON once
# -j/--json is anywhere among the options.

bats_require_minimum_version 1.5.0

setup() {
	load helpers
	make_samples
	cd "$BATS_TEST_TMPDIR"
	export XDG_CONFIG_HOME="$BATS_TEST_TMPDIR/config"
	printf 'junk' >junk.bin
	printf 'id,name\n1,ann\n2,bob\n3,cy\n' >rows.csv
	cp "$SAMPLES/tiny.safetensors" m.safetensors
}

# The checks of contract and every_line_an_object, in one Python process per call (they were a
# jq run per line and per check: 400 jq starts of 18 ms each, most of this file's CPU time).
# json_check MODE TOOL WANT_EXIT STDOUT-FILE STDERR-FILE prints "line STREAM TEXT" when a line is
# not one JSON object; else "ok", then (MODE contract) a line of the stdout records as record
# tokens, then "ok" or the stderr check that failed: "tool", "errobj", "exit" or "success".
# MODE lines: only the lines of STDOUT.
json_check() {
	/usr/bin/python3 - "$@" <<'PY'
import json, re, sys
mode, tool, want_exit = sys.argv[1], sys.argv[2], int(sys.argv[3])
out, err = (open(f, encoding="utf-8", errors="surrogateescape").read() for f in sys.argv[4:6])

def no_constant(name):
    raise ValueError(name)  # NaN and Infinity are not JSON (jq refuses them too)

def jq_type(v):
    return {type(None): "null", bool: "boolean", int: "number", float: "number", str: "string",
            list: "array", dict: "object"}[type(v)]

def text(v):  # what jq's "\(...)" writes for a value
    return v if isinstance(v, str) else json.dumps(v, separators=(",", ":"), ensure_ascii=False)

def objects(stream, content):  # each line alone one JSON object, as jq -c 'type' says "object"
    found = []
    for line in content.split("\n"):
        try:
            v = json.loads(line, parse_constant=no_constant)
        except ValueError:
            v = None
        if not isinstance(v, dict):
            print("line", stream, line)
            sys.exit()
        found.append(v)
    return found

records = objects("stdout", out) if out else []
if mode == "lines":
    print("ok")
    sys.exit()
errors = objects("stderr", err) if err else []
print("ok")
print(" ".join("%s=%s:%s" % (text(r.get("file")), text(r.get("exit")), text(r.get("error")))
                        if r.get("ok", None) is False else "ok" for r in records))
if err:
    if any(not re.fullmatch(re.escape(tool) + " (error|warning|info)", line)
           for o in errors for line in ("%s %s" % (text(o.get("tool")), text(o.get("level")))).split("\n")):
        print("tool")
        sys.exit()
    if any(not re.fullmatch("[A-Za-z]+ [0-9]+ string", line)
           for o in errors if o.get("level") == "error"
           for line in ("%s %s %s" % (text(o.get("error")), text(o.get("exit")), jq_type(o.get("message")))).split("\n")):
        print("errobj")
        sys.exit()
exits = [o.get("exit") for o in errors if o.get("level") == "error"]
numbers = [e for e in exits if type(e) in (int, float)]
if want_exit >= 2:
    # jq's max: null and booleans sort below numbers, strings, arrays and objects above them
    if not numbers or any(type(e) in (str, list, dict) for e in exits) or max(numbers) != want_exit:
        print("exit")
        sys.exit()
elif exits:
    print("success")
    sys.exit()
print("ok")
PY
}

# every_line_an_object TEXT WHAT: each line of TEXT parses, alone, as one JSON object.
every_line_an_object() {
	local result
	printf '%s' "$1" >"$BATS_TEST_TMPDIR/lines.txt"
	result=$(json_check lines - 0 "$BATS_TEST_TMPDIR/lines.txt" /dev/null)
	[ "${result%% *}" = ok ] || fail "$2: not one JSON object: ${result#line stdout }"
}

# contract EXIT 'RECORDS' TOOL ARGS...: run the tool; its exit status is EXIT, its stdout records
# are RECORDS (record tokens: "ok" for a success, FILE=EXIT:KIND for a failure; empty: none),
# every line of both streams is one object, every stderr object names the tool and a level, and
# the worst error object on stderr is EXIT.
contract() {
	local want_exit=$1 want=$2 result tokens lines
	shift 2
	run --separate-stderr "$@"
	[ "$status" -eq "$want_exit" ] || fail "$*: exit $status, expected $want_exit; stderr: $stderr"
	printf '%s' "$output" >"$BATS_TEST_TMPDIR/contract-stdout"
	printf '%s' "$stderr" >"$BATS_TEST_TMPDIR/contract-stderr"
	result=$(json_check contract "$1" "$want_exit" "$BATS_TEST_TMPDIR/contract-stdout" "$BATS_TEST_TMPDIR/contract-stderr")
	lines=${result%%$'\n'*}
	case $lines in
	"line stdout "*) fail "stdout of $*: not one JSON object: ${lines#line stdout }" ;;
	"line stderr "*) fail "stderr of $*: not one JSON object: ${lines#line stderr }" ;;
	ok) ;;
	*) fail "$*: the JSON check failed: $result" ;;
	esac
	result=${result#ok$'\n'}
	tokens=${result%$'\n'*}
	[ "$tokens" = "$want" ] || fail "$*: records '$tokens', expected '$want'"
	case ${result##*$'\n'} in
	ok) ;;
	tool) fail "$*: stderr objects without tool $1 and a level: $stderr" ;;
	errobj) fail "$*: an error object lacks error/exit/message" ;;
	exit) fail "$*: no error object on stderr with exit $want_exit: $stderr" ;;
	success) fail "$*: an error object on success: $stderr" ;;
	*) fail "$*: the JSON check failed: $result" ;;
	esac
}

@test "fmt-inspect: one record per input, failures included; usage errors as JSON" {
	contract 0 'ok' fmt-inspect --json m.safetensors
	contract 3 'missing.gguf=3:IoError' fmt-inspect --json missing.gguf
	contract 4 'ok missing.st=3:IoError junk.bin=4:InvalidFormat ok' fmt-inspect -j m.safetensors missing.st junk.bin rows.csv
	# a per-file usage error is that file's record; the others are still reported
	contract 2 'm.safetensors=2:UsageError ok' fmt-inspect --json --schema m.safetensors rows.csv
	# an error before any file is opened: each input its record
	contract 3 'a.ald=3:IoError b.ald=3:IoError' fmt-inspect --json --password-file nope.txt a.ald b.ald
	# refused command lines: JSON once --json is among the options, wherever it is
	contract 2 '' fmt-inspect --bogus --json m.safetensors
	contract 2 '' fmt-inspect m.safetensors --head x -j
	contract 2 '' fmt-inspect m.safetensors --json --tensor
	[ "$(jq -r .message <<<"$stderr")" = 'option --tensor needs a value (NAME)' ]
	contract 2 '' fmt-inspect -qj
	[ "$stderr" = '{"tool":"fmt-inspect","level":"error","file":null,"error":"UsageError","exit":2,"message":"no input file"}' ]
	# -q: nothing on stdout, the errors still on stderr
	contract 3 '' fmt-inspect -q --json missing.gguf
	# without --json the text lines stay as they were
	run --separate-stderr fmt-inspect --bogus m.safetensors
	assert_failure 2
	[ "$stderr" = "fmt-inspect: error: unknown option '--bogus'
Try 'fmt-inspect --help'." ]
}

@test "fmt-inspect --head --json: \"rows\" is the number of rows shown, the rows are in \"head\"" {
	contract 0 'ok' fmt-inspect --json --head 2 rows.csv
	assert_output '{"file":"rows.csv","format":"csv","rows":2,"head":[{"id":1,"name":"ann"},{"id":2,"name":"bob"}]}'
	run fmt-inspect --json --head 10 rows.csv
	[ "$(jq -c '[.rows, (.head | length)]' <<<"$output")" = '[3,3]' ]
	run fmt-inspect --json --head 0 rows.csv
	assert_output '{"file":"rows.csv","format":"csv","rows":0,"head":[]}'
	# the whole report: a number, or absent when the file does not say it (only reading every
	# row would): an Arrow stream cut inside its batch
	[ "$(fmt-inspect --json rows.csv | jq -c .rows)" = 3 ]
	fmt-convert -q rows.csv rows.arrows
	[ "$(fmt-inspect --json - <rows.arrows | jq -c '[.format, .rows]')" = '["arrow-stream",3]' ]
	head -c -20 rows.arrows >cut.arrows
	[ "$(fmt-inspect --json - <cut.arrows | jq -c '[.format, has("rows")]')" = '["arrow-stream",false]' ]
}

@test "2>&1 | jq reads the merged streams of a failing run" {
	run bash -c 'fmt-inspect --json m.safetensors missing.gguf 2>&1 | jq -c "[.file, .ok, .level]"'
	assert_success
	[ "${#lines[@]}" -eq 3 ]
	[[ "$output" == *'["missing.gguf",null,"error"]'* ]]
	[[ "$output" == *'["missing.gguf",false,null]'* ]]
	[[ "$output" == *'["m.safetensors",null,null]'* ]]
}

@test "fmt-verify: one record per input; key errors before any file give each input its record" {
	fmt-convert -q m.safetensors m.apsim
	contract 0 'ok ok' fmt-verify --json m.safetensors m.apsim
	contract 4 'ok junk.bin=4:InvalidFormat missing=3:IoError' fmt-verify --json m.apsim junk.bin missing
	[ "$(jq -r 'select(.ok == false) | .failed_file' <<<"$output" | paste -sd' ')" = 'junk.bin missing' ]
	contract 3 'm.apsim=3:IoError junk.bin=3:IoError' fmt-verify --json --secret-file nope m.apsim junk.bin
	contract 3 'm.apsim=3:IoError' fmt-verify --json -p nope.pub m.apsim
	contract 2 '' fmt-verify --json
	contract 2 '' fmt-verify --json --format nope m.apsim
	# a signature by another key: exit 7
	printf 'a-team-secret\n' >s.txt
	fmt-sign sign -q --secret-file s.txt m.apsim
	printf 'another-secret\n' >t.txt
	contract 7 'm.apsim=7:SignatureInvalid' fmt-verify --json --secret-file t.txt m.apsim
}

@test "fmt-convert: one record for the conversion; none when standard output carries the model" {
	contract 0 'ok' fmt-convert --json m.safetensors out.gguf
	contract 3 'missing.safetensors=3:IoError' fmt-convert --json missing.safetensors out2.gguf
	contract 4 'junk.bin=4:InvalidFormat' fmt-convert --json junk.bin out3.gguf
	contract 0 'ok' fmt-convert --json --dry-run m.safetensors out4.gguf
	contract 3 '' fmt-convert --json --to gguf missing.safetensors -
	contract 2 '' fmt-convert --json m.safetensors
	contract 2 '' fmt-convert --json --to nope m.safetensors x
	# a warning is an object too
	fmt-convert --set n:u32=7 m.safetensors a.gguf
	contract 0 'ok' fmt-convert --json a.gguf b.safetensors
	[ "$stderr" = '{"tool":"fmt-convert","level":"warning","file":null,"message":"1 metadata entry dropped: the target holds only string values"}' ]
	# --verbose notes too
	contract 0 'ok' fmt-convert --json -v --shard 40 m.safetensors set.apsim.index.json
	[ "$(jq -r 'select(.level == "info") | .message' <<<"$stderr" | head -1)" = 'wrote set-00001-of-00003.apsim' ]
	# an Ed25519 key that cannot be read: the conversion's record
	contract 3 'm.safetensors=3:IoError' fmt-convert --json --sign-key nope.key m.safetensors s.apsim
	# -q: no record, on success or failure (they were printed); the error still on stderr
	contract 0 '' fmt-convert -q --json m.safetensors q.gguf
	contract 3 '' fmt-convert -q --json missing.safetensors q2.gguf
	[ "$(jq -r .error <<<"$stderr")" = IoError ]
	contract 0 '' fmt-convert -q --json --dry-run m.safetensors q3.gguf
}

@test "fmt-sign: one record per FILE, or for the operation when it has none" {
	fmt-sign keygen -q -W -p a.pub -s a.key
	cp m.safetensors n.safetensors
	fmt-convert -q m.safetensors m.apsim
	fmt-convert -q rows.csv d.ald
	contract 0 'ok' fmt-sign keygen --json -W -p b.pub -s b.key
	contract 2 'null=2:UsageError' fmt-sign keygen --json -W -p b.pub -s b.key
	contract 3 'ok missing.bin=3:IoError' fmt-sign sign --json -s a.key m.safetensors missing.bin
	# a success is "ok":true, as a failure is "ok":false (jq 'select(.ok)'; it had no "ok")
	[ "$(jq -c '[.file, .ok]' <<<"$output" | paste -sd' ')" = '["m.safetensors",true] ["missing.bin",false]' ]
	contract 7 'ok n.safetensors=7:SignatureInvalid' fmt-sign verify --json -p a.pub m.safetensors n.safetensors
	[ "$(jq -c '[.file, .ok]' <<<"$output" | paste -sd' ')" = '["m.safetensors",true] ["n.safetensors",false]' ]
	contract 3 'm.safetensors=3:IoError n.safetensors=3:IoError' fmt-sign sign --json -s nope.key m.safetensors n.safetensors
	contract 3 'null=3:IoError' fmt-sign key-id --json --secret-file nope
	contract 0 'ok' fmt-sign key-id --json -p a.pub
	[ "$(jq -c .ok <<<"$output")" = true ]
	local cmd
	while IFS= read -r cmd; do
		run --separate-stderr $cmd
		assert_success
		[ "$(jq -c .ok <<<"$output")" = true ] || fail "$cmd: $output"
	done <<'EOF2'
fmt-sign keygen --json -W -p c.pub -s c.key
fmt-sign keygen --json --hmac
fmt-sign keygen --json --watermark -s w.key
fmt-sign key-id --json --hmac-key
fmt-sign sign --json --hmac-key m.apsim
fmt-sign sign --json --embed -s a.key d.ald
fmt-sign verify --json -p a.pub d.ald
fmt-sign license --json --licensee acme --sign-key a.key d.ald
EOF2
	contract 2 '' fmt-sign --json
	contract 2 '' fmt-sign sign --json
	contract 2 '' fmt-sign nope --json
}

@test "fmt-shard: one record for the operation, named by its input" {
	contract 0 'ok' fmt-shard split --json --max-size 300 m.safetensors -o part
	contract 3 'missing.safetensors=3:IoError' fmt-shard split --json --max-size 300 missing.safetensors
	contract 0 'ok' fmt-shard merge --json part.safetensors.index.json -o whole.safetensors
	contract 2 'part.safetensors.index.json=2:UsageError' fmt-shard merge --json part.safetensors.index.json -o whole.safetensors
	contract 0 'ok' fmt-shard pack --json part.safetensors.index.json -o b.tar
	contract 4 'junk.bin=4:InvalidFormat' fmt-shard unpack --json junk.bin -C out
	contract 2 '' fmt-shard split --json
	contract 2 '' fmt-shard merge --json part.safetensors.index.json
	contract 2 '' fmt-shard split --json --max-size 0 m.safetensors
}

@test "fmt-watermark: one record for the subcommand's file; none when embed writes to standard output" {
	/usr/bin/python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(32)))' >seller.key
	chmod 600 seller.key
	contract 0 'ok' fmt-watermark embed --json --key seller.key --buyer alice m.safetensors w.safetensors
	contract 3 'missing.safetensors=3:IoError' fmt-watermark extract --json --key seller.key missing.safetensors
	contract 3 'm.safetensors=3:IoError' fmt-watermark prove --json --key nope.key --buyer alice m.safetensors
	contract 3 '' fmt-watermark embed --json --key seller.key --buyer alice --to safetensors missing.safetensors -
	contract 2 '' fmt-watermark prove --json --key seller.key m.safetensors
	contract 2 '' fmt-watermark --json nope
	# -q: no record (embed printed its whole report, a failure its record)
	contract 0 '' fmt-watermark embed -q --json --key seller.key --buyer bob m.safetensors q.safetensors
	contract 3 '' fmt-watermark extract -q --json --key seller.key missing.safetensors
	contract 1 '' fmt-watermark prove -q --json --key seller.key --buyer alice w.safetensors
}

@test "nk-run: the model's record; --test: its case records, a model that fails its failure record" {
	local fix="$REPO_ROOT/tests/data/fixtures/nk"
	contract 0 'ok' nk-run --json --random 1 "$fix/test_mlp.nk"
	contract 3 'missing.nk=3:IoError' nk-run --json --random 1 missing.nk
	contract 4 'junk.bin=4:InvalidFormat' nk-run --json --random 1 junk.bin
	contract 2 '' nk-run --json "$fix/test_mlp.nk"
	contract 2 '' nk-run --json --input 1 --random 2 "$fix/test_mlp.nk"
	# a model that cannot be loaded counts as a failed case in the summary; the exit status is its
	# own (3, as its record says), not 11: no case of it ran
	run --separate-stderr nk-run --test --json "$fix/test_mlp.nk" missing.nk
	assert_failure 3
	every_line_an_object "$output" stdout
	[ "$(jq -c '[.file, .case, .pass, .ok, .exit, .passed, .failed]' <<<"$output" | sed "s|$fix/||")" = \
		"$(printf '%s\n' '["test_mlp.nk",0,true,null,null,null,null]' '["test_mlp.nk",1,true,null,null,null,null]' \
			'["test_mlp.nk",2,true,null,null,null,null]' '["missing.nk",null,null,false,3,null,null]' \
			'[null,null,null,null,null,3,1]')" ]
	[ "$stderr" = '{"tool":"nk-run","level":"error","file":"missing.nk","error":"IoError","exit":3,"message":"cannot open: No such file or directory"}' ]
	# -q: no record, its case records and the run's too (they were printed, the failure's not)
	contract 0 '' nk-run -q --json --random 1 "$fix/test_mlp.nk"
	run --separate-stderr nk-run -q --test --json "$fix/test_mlp.nk" missing.nk
	assert_failure 3
	assert_output ''
	[ "$(jq -r .error <<<"$stderr")" = IoError ]
}

@test "names and paths of invalid UTF-8: shown with U+FFFD in JSON (jansson refused them and the key went missing); rows are not read past such a name (exit 4)" {
	printf 'a\xffb,c\n1,2\n' >bad.csv
	run --separate-stderr fmt-inspect --json bad.csv
	assert_success
	assert_equal "$(jq -ac '[.schema.fields[].name]' <<<"$output")" '["a\ufffdb","c"]'
	# a name is text as a value is: a JSON Lines key, an Arrow or Parquet name (the JSON Lines
	# writer wrote the byte as it was: not JSON)
	local cmd
	for cmd in "fmt-inspect --stats bad.csv" "fmt-inspect --head 1 bad.csv" "fmt-verify bad.csv" "fmt-convert bad.csv out.jsonl"; do
		run --separate-stderr $cmd
		assert_equal "$status" 4
		assert_equal "$stderr" "${cmd%% *}: error: bad.csv: column 1: its name is not valid UTF-8"
	done
	[ ! -e out.jsonl ]
	run --separate-stderr fmt-convert --rename "name=n$(printf '\xff')" rows.csv out.jsonl
	assert_equal "$status" 2
	assert_equal "$stderr" "fmt-convert: error: rows.csv: --rename 'name=n\\xff': the new name is not valid UTF-8"
	[ ! -e out.jsonl ]
	run --separate-stderr fmt-convert --json rows.csv "o$(printf '\xff').csv"
	assert_success
	assert_equal "$(jq -ac '[.input, .output, .rows]' <<<"$output")" '["rows.csv","o\ufffd.csv",3]'
}
