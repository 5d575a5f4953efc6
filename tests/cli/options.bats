#!/usr/bin/env bats
# One option table per tool: what a tool accepts (its table, printed by the hidden --dump-options
# that the completions are generated from) is exactly what --help lists, what the OPTIONS
# section of its manual page documents and what its bash and zsh completions offer, in both
# directions; and every option of the table is accepted by the tool while others are refused.

bats_require_minimum_version 1.5.0

TOOLS=($(cd "$BATS_TEST_DIRNAME/../../tools" && ls -d */ | tr -d /))

setup() {
	load helpers
	COMPLETIONS=$FMTKIT_BIN/../completions
	# Nothing a tool might touch is the user's.
	export HOME=$BATS_TEST_TMPDIR XDG_CONFIG_HOME=$BATS_TEST_TMPDIR/config
	cd "$BATS_TEST_TMPDIR"
}

# What `run --separate-stderr CMD` gives the loops below ($status, $stderr; stdout dropped),
# without its mktemp and line splitting: they run each tool a few hundred times.
run_err() {
	stderr=$("$@" 2>&1 >/dev/null) && status=0 || status=$?
}

dump_of() {
	[ -x "$FMTKIT_BIN/$1" ] || fail "$FMTKIT_BIN/$1 is not built (run make)"
	"$FMTKIT_BIN/$1" --dump-options || fail "$1 --dump-options exited with $?"
}

# The table's options of subcommand $2 (all when empty): "--long" and "-s" words, sorted.
table_words() {
	dump_of "$1" | awk -F '\t' -v cmd="$2" '
		$1 == "option" && (cmd == "" || $7 == "-" || index("," $7 ",", "," cmd ",")) {
			print "--" $2; if ($3 != "-") print $3 }' | sort -u
}

table_longs() { table_words "$1" | grep -- '^--'; }
table_shorts() { table_words "$1" | grep -vx -- '--.*' || true; }

# The option lines of --help ("  -j, --json ..." / "      --tree ..."): long and short words.
help_words() {
	"$FMTKIT_BIN/$1" --help | sed -nE 's/^  (-[A-Za-z0-9], |    )(--[a-z][a-z0-9-]*).*/\1\2/p' |
		tr -d ',' | tr ' ' '\n' | grep -v '^$' | sort -u
}

# The tags (.TP) of the OPTIONS section of the manual page, with \- as -.
man_tags() {
	awk '/^\.SH OPTIONS/ { o = 1; next } /^\.SH / { o = 0 } o && p { print; p = 0 } o && /^\.(TP|TQ)/ { p = 1 }' \
		"$REPO_ROOT/man/$1.1" | sed 's/\\-/-/g; s/\\f[BIRP]//g'
}

man_words() {
	man_tags "$1" | grep -oE -- '(^|[ "])--?[A-Za-z0-9][a-z0-9-]*' | tr -d ' "' | sort -u
}

# Long options named by the _arguments specs of the zsh completion.
zsh_longs() {
	grep -oE -- "(^|[ '{,*)])--[a-z][a-z0-9-]*(=?\[|=?\}|,)" "$COMPLETIONS/zsh/_$1" |
		grep -oE -- '--[a-z][a-z0-9-]*' | sort -u
}

subcommands_of() {
	dump_of "$1" | awk -F '\t' '$1 == "command" { print $2 }'
}

# "what" lists $got where $want was expected: name what is missing and what is extra.
assert_same_set() {
	local what=$1 want=$2 got=$3 missing extra
	missing=$(comm -23 <(sort -u <<<"$want") <(sort -u <<<"$got") | tr '\n' ' ')
	extra=$(comm -13 <(sort -u <<<"$want") <(sort -u <<<"$got") | tr '\n' ' ')
	[ -z "$missing$extra" ] || fail "$what: missing [${missing% }], not in the table [${extra% }]"
}

check_conventions_options() {
	[ "${#TOOLS[@]}" -ge 5 ] || fail "found only ${#TOOLS[@]} tools"
	for tool in "${TOOLS[@]}"; do
		words=$(table_words "$tool")
		for opt in --json -j --quiet -q --verbose -v --no-progress --help -h --version; do
			grep -qx -- "$opt" <<<"$words" || fail "$tool: no $opt"
		done
		# the hidden helper is in no list a user reads
		! grep -qx -- --dump-options <<<"$words" || fail "$tool lists --dump-options"
	done
}

@test "every tool has a table with the options CONVENTIONS.md gives every tool" {
	untraced check_conventions_options
}

check_help_lists_table() {
	for tool in "${TOOLS[@]}"; do
		assert_same_set "$tool --help" "$(table_words "$tool")" "$(help_words "$tool")"
	done
}

@test "--help lists exactly the options of the table" {
	untraced check_help_lists_table
}

# tag_names LONG VALUE: a line of $tags (the man_tags lines) that has --LONG followed by a blank,
# a quote or its end also has the word VALUE (grep -E | grep -qE, in the shell).
tag_names() {
	local tag re_long="--$1( |\"|$)" re_value="(^|[^A-Za-z])$2([^A-Za-z]|$)"
	for tag in "${tags[@]}"; do
		# (the glob first: bash compiles a regular expression at each =~)
		[[ $tag == *"--$1"* && $tag =~ $re_long && $tag =~ $re_value ]] && return 0
	done
	return 1
}

check_man_documents_table() {
	for tool in "${TOOLS[@]}"; do
		assert_same_set "man/$tool.1 OPTIONS" "$(table_words "$tool")" "$(man_words "$tool")"
		# "--threads N" in the table: the tag of --threads names N too
		mapfile -t tags < <(man_tags "$tool")
		while IFS=$'\t' read -r long arg; do
			value=${arg%%[!A-Z]*}
			tag_names "$long" "$value" ||
				fail "man/$tool.1: the tag of --$long does not name its value $value"
		done < <(dump_of "$tool" | awk -F '\t' '$1 == "option" && $4 != "-" { print $2 "\t" $4 }')
	done
}

@test "the manual page documents exactly the options of the table, with their value names" {
	untraced check_man_documents_table
}

check_bash_completion_table() {
	for tool in "${TOOLS[@]}"; do
		run bash_complete "$tool" -
		assert_success
		assert_same_set "bash completion of $tool" "$(table_words "$tool")" "$output"
		for cmd in $(subcommands_of "$tool"); do
			run bash_complete "$tool" "$cmd" -
			assert_success
			assert_same_set "bash completion of $tool $cmd" "$(table_words "$tool" "$cmd")" "$output"
		done
	done
}

@test "the bash completion offers exactly the options of the table, per subcommand" {
	untraced check_bash_completion_table
}

check_zsh_spec_table() {
	for tool in "${TOOLS[@]}"; do
		head -n 1 "$COMPLETIONS/zsh/_$tool" | grep -qx "#compdef $tool" || fail "_$tool: no #compdef line"
		assert_same_set "zsh completion of $tool" "$(table_longs "$tool")" "$(zsh_longs "$tool")"
		command -v zsh >/dev/null || fail "zsh is not installed (scripts/install-deps installs it)"
		run zsh -n "$COMPLETIONS/zsh/_$tool"
		assert_success
	done
}

@test "the zsh completion has a spec for exactly the options of the table" {
	untraced check_zsh_spec_table
}

@test "every zsh completion loads with compinit: sourced it registers itself, autoloaded it completes" {
	command -v zsh >/dev/null || fail "zsh is not installed (scripts/install-deps installs it)"
	# one zsh, one compinit: before each file is sourced its tool has no completion, after it
	# the file's function (a file that registered another tool would show as that tool's "before")
	local args=() want=
	for tool in "${TOOLS[@]}"; do
		args+=("$COMPLETIONS/zsh/_$tool" "$tool")
		want+="$tool: [] [_$tool]"$'\n'
	done
	run zsh -f -c 'autoload -U compinit; compinit -u -D
		while (( $# )); do
			before=$_comps[$2]
			source "$1" || exit 1
			print -r -- "$2: [$before] [$_comps[$2]]"
			shift 2
		done' zsh "${args[@]}"
	assert_success
	assert_output "${want%$'\n'}"
}

# Lines of the generated zsh completion of $1 that must be there exactly (standard input).
assert_zsh_lines() {
	local line
	while IFS= read -r line; do
		grep -Fxq -- "$line" "$COMPLETIONS/zsh/_$1" || fail "_$1 has no line: $line"
	done
}

@test "zsh completion: described values, registry values and exclusion groups come from the tables" {
	assert_zsh_lines fmt-convert <<'ZSH'
    '--dtype=[f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, iq4_xs (GGUF; any case), int8, int4, fp8, fp6, fp4 (.apsim compressed tensors) or keep (default: f16 for GGUF, keep otherwise); for GGUF also llama-quantize'\''s presets (Q4_K_M, Q5_K_S, ...) and its type numbers (15 is Q4_K_M)]:TYPE:((f32\:"float32" f16\:"IEEE half precision" bf16\:"bfloat16" q8_0\:"8-bit blocks of 32" q4_0\:"4-bit blocks of 32" q4_1\:"4-bit blocks of 32 with a min" q5_0\:"5-bit blocks of 32" q5_1\:"5-bit blocks of 32 with a min" q2_k\:"2-bit K-quant, super-blocks of 256" q3_k\:"3-bit K-quant, super-blocks of 256" q4_k\:"4-bit K-quant, super-blocks of 256" q5_k\:"5-bit K-quant, super-blocks of 256" q6_k\:"6-bit K-quant, super-blocks of 256" iq4_nl\:"4-bit non-linear blocks of 32" iq4_xs\:"4-bit non-linear, super-blocks of 256" int8\:"int8 codes, per-row scales" int4\:"int4 codes, block-32 scales" fp8\:"FP8 E4M3 codes" fp6\:"FP6 E3M2 codes" fp4\:"FP4 E2M1 codes" keep\:"keep each tensor'\''s dtype" Q3_K_S\:"llama-quantize'\''s mix, mostly Q3_K" Q3_K_M\:"llama-quantize'\''s mix, mostly Q3_K" Q3_K_L\:"llama-quantize'\''s mix, mostly Q3_K" Q4_K_S\:"llama-quantize'\''s mix, mostly Q4_K" Q4_K_M\:"llama-quantize'\''s mix, mostly Q4_K" Q5_K_S\:"llama-quantize'\''s mix, mostly Q5_K" Q5_K_M\:"llama-quantize'\''s mix, mostly Q5_K"))' \
    '(--hmac-key --secret-file --key-secret-file --secret-env --secret-prompt --sign-key)--secret-prompt[sign with a team secret typed at a prompt]' \
    '--arch=[set general.architecture (GGUF; arch for APR)]:NAME:(llama qwen2 gemma2 phi3 gpt2 mistral)' \
ZSH
	assert_zsh_lines fmt-shard <<'ZSH'
        '(--max-size --max-tensors)--max-tensors=[split: at most N tensors per shard]:N: ' \
        '(--hmac-key --secret-file --key-secret-file --secret-env --secret-prompt)--secret-env=[unpack: ... with the team secret in variable NAME]:NAME:_parameters -g "*export*"' \
ZSH
	# the dump that the lines come from: values with their descriptions, groups, registry words
	run "$FMTKIT_BIN/fmt-convert" --dump-options
	assert_line $'value\tkeep\t-\tkeep each tensor\'s dtype'
	# the GGUF writer's presets follow the dtypes, those that are not a dtype's name
	assert_line $'value\tQ4_K_M\t-\tllama-quantize\'s mix, mostly Q4_K'
	assert_line $'value\tQ3_K_L\t-\tllama-quantize\'s mix, mostly Q3_K'
	refute_line --regexp $'^value\t(Q4_0|Q6_K|IQ4_XS|Q4_K)\t'
	assert_line --regexp $'^option\tarch\t-\tNAME\twords\tllama qwen2 gemma2 phi3 gpt2 mistral\t-\t0\t0\t'
	assert_line --regexp $'^option\tsecret-prompt\t-\t-\tnone\t-\t-\t0\t1\t'
}

# zsh_listings LINE...: what zsh lists after each LINE and a tab, in an interactive zsh
# (tests/cli/zsh-complete.zsh drives one through zpty, one for all the LINEs), in $LISTINGS
# (LISTINGS[i] for the i-th LINE).
zsh_listings() {
	local all rest end=$'\n<<< end of listing >>>\n'
	all=$(zsh -f "$BATS_TEST_DIRNAME/zsh-complete.zsh" "$COMPLETIONS/zsh" "$@") || fail "zsh-complete.zsh failed: $all"
	LISTINGS=()
	rest=$all
	while [[ $rest == *"$end"* ]]; do
		LISTINGS+=("${rest%%"$end"*}")
		rest=${rest#*"$end"}
	done
	LISTINGS+=("$rest")
	[ "${#LISTINGS[@]}" -eq $# ] || fail "zsh-complete.zsh: ${#LISTINGS[@]} listings for $# lines"
}

# The long options of a listing: the words left of each " -- ".
listed_longs() {
	grep -- ' -- ' <<<"$1" | sed 's/ -- .*//' | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u
}

@test "zsh, interactively, describes --dtype values and offers one option of an exclusion group" {
	command -v zsh >/dev/null || fail "zsh is not installed (scripts/install-deps installs it)"
	zsh_listings "fmt-convert --dtype " "fmt-convert --arch " "fmt-shard split --max-" \
		"fmt-shard split --max-size 1MB --max-"
	listed=${LISTINGS[0]}
	# (zsh pads each line to the widest and puts values of one description on one line)
	grep -qE -- '^keep +-- keep each tensor.s dtype *$' <<<"$listed" || fail "no described keep: $listed"
	grep -qE -- '^q8_0 +-- 8-bit blocks of 32 *$' <<<"$listed" || fail "no described q8_0: $listed"
	grep -qE -- "^(Q4_K_[MS] +){2}-- llama-quantize's mix, mostly Q4_K *\$" <<<"$listed" ||
		fail "no described Q4_K_M and Q4_K_S: $listed"
	listed=${LISTINGS[1]}
	for arch in llama qwen2 gemma2; do
		grep -qE -- "(^| )$arch( |$)" <<<"$listed" || fail "zsh does not offer --arch $arch: $listed"
	done
	# both limits are offered alone; after one of them the other is not
	assert_same_set "zsh: fmt-shard split --max-" "--max-size
--max-tensors" "$(listed_longs "${LISTINGS[2]}")"
	assert_same_set "zsh: fmt-shard split --max-size 1MB --max-" "" "$(listed_longs "${LISTINGS[3]}")"
}

check_options_accepted() {
	for tool in "${TOOLS[@]}"; do
		# No operands: each run stops at a usage check after the options were parsed, before
		# any work (a value of 1 is valid for every numeric option).
		while IFS=$'\t' read -r long arg; do
			[ "$long" = help ] || [ "$long" = version ] && continue
			if [ "$arg" = - ]; then
				run_err "$FMTKIT_BIN/$tool" "--$long"
			else
				run_err "$FMTKIT_BIN/$tool" "--$long=1"
			fi
			[[ $stderr != *"unknown option"* ]] || fail "$tool does not accept --$long: $stderr"
			[ "$status" -eq 2 ] || fail "$tool --$long without operands: exit $status, expected 2"
		done < <(dump_of "$tool" | awk -F '\t' '$1 == "option" { print $2 "\t" $4 }')
		run --separate-stderr "$FMTKIT_BIN/$tool" --bogus
		assert_failure 2
		assert_equal "$stderr" "$tool: error: unknown option '--bogus'
Try '$tool --help'."
		run --separate-stderr "$FMTKIT_BIN/$tool" -Z
		assert_failure 2
		[[ $stderr == "$tool: error: unknown option '-Z'"* ]] || fail "$tool -Z: $stderr"
	done
}

@test "every option of the table is accepted; others are refused with exit 2" {
	untraced check_options_accepted
}

# Issue 19 item 10: keeping only the last of two values (a second --encrypt-to) drops the
# first silently, so the runner refuses it before any option acts, whatever the values.
check_given_twice() {
	for tool in "${TOOLS[@]}"; do
		while IFS=$'\t' read -r long short arg repeat; do
			[ "$arg" != - ] || continue
			name=--$long
			[ "$short" = - ] || name="$short/--$long"
			run_err "$FMTKIT_BIN/$tool" "--$long=1" "--$long=2" x
			if [ "$repeat" = 0 ]; then
				[ "$status" -eq 2 ] || fail "$tool --$long twice: exit $status, expected 2"
				assert_equal "$stderr" "$tool: error: $name given twice (it takes one value)
Try '$tool --help'."
			else
				assert_equal "$repeat" 1
				[[ $stderr != *"given twice"* ]] || fail "$tool --$long is repeatable: $stderr"
			fi
		done < <(dump_of "$tool" | awk -F '\t' '$1 == "option" { print $2 "\t" $3 "\t" $4 "\t" $8 }')
		# flags may repeat (-v -v counts)
		while IFS=$'\t' read -r long repeat; do
			assert_equal "$repeat" 0
			[ "$long" = help ] || [ "$long" = version ] && continue
			run_err "$FMTKIT_BIN/$tool" "--$long" "--$long"
			[[ $stderr != *"given twice"* ]] || fail "$tool --$long is a flag: $stderr"
		done < <(dump_of "$tool" | awk -F '\t' '$1 == "option" && $4 == "-" { print $2 "\t" $8 }')
	done
	# the short and the long name are one option; so are two names with one meaning
	run --separate-stderr "$FMTKIT_BIN/fmt-shard" split -o a --output b x.safetensors
	assert_failure 2
	assert_equal "$stderr" "fmt-shard: error: -o/--output given twice (it takes one value)
Try 'fmt-shard --help'."
	run --separate-stderr "$FMTKIT_BIN/fmt-verify" --key-secret-file a --secret-file b x
	assert_failure 2
	assert_equal "$stderr" "fmt-verify: error: --secret-file given after --key-secret-file, the same option (it takes one value)
Try 'fmt-verify --help'."
}

@test "every option that takes one value is refused given twice (exit 2, named); repeatable ones and flags repeat" {
	untraced check_given_twice
}

@test "options that take no value refuse one, options that take one demand it; ambiguous abbreviations" {
	run --separate-stderr "$FMTKIT_BIN/fmt-inspect" --json=yes x.safetensors
	assert_failure 2
	assert_equal "$stderr" "fmt-inspect: error: option --json takes no value
Try 'fmt-inspect --help'."
	run --separate-stderr "$FMTKIT_BIN/fmt-inspect" x.safetensors --tensor
	assert_failure 2
	assert_equal "$stderr" "fmt-inspect: error: option --tensor needs a value (NAME)
Try 'fmt-inspect --help'."
	run --separate-stderr "$FMTKIT_BIN/fmt-sign" --secret "team secret" key-id
	assert_failure 2
	assert_equal "$stderr" "fmt-sign: error: option '--secret' is ambiguous (--secret-file, --secret-env or --secret-prompt)
Try 'fmt-sign --help'."
	run --separate-stderr "$FMTKIT_BIN/fmt-shard" split x.safetensors -o
	assert_failure 2
	assert_equal "$stderr" "fmt-shard: error: option -o needs a value (PATH)
Try 'fmt-shard --help'."
}

@test "a bad value is refused naming the option as it was given (-T or --threads)" {
	# the parsers' messages ("'abc' is not a whole number") did not say which option they meant
	for pair in "fmt-convert -T abc|-T: 'abc' is not a whole number" \
		"fmt-convert --threads=abc|--threads: 'abc' is not a whole number" \
		"fmt-convert --thr 2000|--threads: '2000' is not a whole number from 0 to 1024" \
		"fmt-shard split --seed -1|--seed: '-1' is not a whole number" \
		"fmt-shard split --max-size 5XB|--max-size: '5XB': unknown size unit (use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)" \
		"fmt-inspect --head x|--head takes a row count"; do
		cmd=${pair%%|*} tool=${cmd%% *}
		run --separate-stderr "$FMTKIT_BIN/$tool" ${cmd#* } in.safetensors out.gguf
		assert_failure 2
		assert_equal "$stderr" "$tool: error: ${pair#*|}
Try '$tool --help'."
	done
}

# An empty path named nothing: `fmt-convert '' out.gguf` said "fmt-convert: error: cannot open: No
# such file or directory" (exit 3). The runner refuses it in every operand (all are files) and
# in every option whose value is a file or directory, before anything is opened.
check_empty_paths() {
	run --separate-stderr "$FMTKIT_BIN/fmt-convert" '' out.gguf
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: '': empty path (file argument 1)
Try 'fmt-convert --help'."
	run --separate-stderr "$FMTKIT_BIN/fmt-convert" in.safetensors ''
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: '': empty path (file argument 2)
Try 'fmt-convert --help'."
	run --separate-stderr "$FMTKIT_BIN/fmt-convert" --json '' out.gguf
	assert_failure 2
	assert_equal "$stderr" '{"tool":"fmt-convert","level":"error","file":null,"error":"UsageError","exit":2,"message":"'"''"': empty path (file argument 1)"}'
	for tool in "${TOOLS[@]}"; do
		cmd=$(dump_of "$tool" | awk -F '\t' '$1 == "command" { print $2; exit }')
		run_err "$FMTKIT_BIN/$tool" $cmd ''
		[ "$status" -eq 2 ] || fail "$tool $cmd '': exit $status, expected 2"
		assert_equal "$stderr" "$tool: error: '': empty path (file argument 1)
Try '$tool --help'."
		while IFS=$'\t' read -r long cmds; do
			[ "$cmds" = - ] && cmds=$cmd
			run_err "$FMTKIT_BIN/$tool" ${cmds%%,*} "--$long" '' x
			[ "$status" -eq 2 ] || fail "$tool ${cmds%%,*} --$long '': exit $status, expected 2"
			assert_equal "$stderr" "$tool: error: --$long: '': empty path
Try '$tool --help'."
		done < <(dump_of "$tool" | awk -F '\t' '$1 == "option" && ($5 == "file" || $5 == "dir") { print $2 "\t" $7 }')
	done
}

@test "an empty path is refused in every tool, as an operand or an option's file (exit 2, named)" {
	untraced check_empty_paths
}

@test "an option of another subcommand is refused, naming where it belongs" {
	run --separate-stderr "$FMTKIT_BIN/fmt-shard" merge --max-size 1MB x.safetensors -o y.safetensors
	assert_failure 2
	assert_equal "$stderr" "fmt-shard: error: --max-size belongs to split, not merge
Try 'fmt-shard --help'."
	run --separate-stderr "$FMTKIT_BIN/fmt-sign" keygen --hmac --secret-env X
	assert_failure 2
	assert_equal "$stderr" "fmt-sign: error: --secret-env belongs to sign and key-id, not keygen
Try 'fmt-sign --help'."
	[ ! -e "$XDG_CONFIG_HOME/fmtkit/hmac.key" ]
	run --separate-stderr "$FMTKIT_BIN/fmt-shard" frobnicate x
	assert_failure 2
	assert_equal "$stderr" "fmt-shard: error: unknown subcommand 'frobnicate' (use split, merge, pack, unpack or concat)
Try 'fmt-shard --help'."
}

check_help_subcommands() {
	for tool in "${TOOLS[@]}"; do
		for cmd in $(subcommands_of "$tool"); do
			"$FMTKIT_BIN/$tool" --help | grep -qE "^  $cmd +[a-z]" || fail "$tool --help does not list $cmd"
		done
	done
}

@test "--help lists each subcommand the table has" {
	untraced check_help_subcommands
}

# Run a command with its standard output on /dev/full (run itself captures stdout).
to_full() {
	"$@" >/dev/full
}

@test "every tool exits 3 when standard output cannot be written (full disk)" {
	[ -w /dev/full ] || skip "no /dev/full"
	"$REPO_ROOT/scripts/gen/sample-models" samples >/dev/null
	cp samples/tiny.safetensors model.safetensors
	for tool in "${TOOLS[@]}"; do
		for opt in --help --version; do
			run --separate-stderr "$FMTKIT_BIN/$tool" "$opt"
			assert_success
			run --separate-stderr to_full "$FMTKIT_BIN/$tool" "$opt"
			assert_failure 3
			assert_equal "$stderr" "$tool: error: cannot write to standard output: No space left on device"
		done
	done
	run --separate-stderr to_full "$FMTKIT_BIN/fmt-convert" --dry-run model.safetensors out.gguf
	assert_failure 3
	[ ! -e out.gguf ]
	run --separate-stderr to_full "$FMTKIT_BIN/fmt-inspect" model.safetensors
	assert_failure 3
	run --separate-stderr to_full "$FMTKIT_BIN/fmt-verify" model.safetensors
	assert_failure 3
	run --separate-stderr to_full "$FMTKIT_BIN/fmt-shard" split --dry-run --max-tensors 2 model.safetensors
	assert_failure 3
	[ -z "$(ls model-* 2>/dev/null)" ]
	"$FMTKIT_BIN/fmt-sign" keygen --hmac >/dev/null
	run --separate-stderr to_full "$FMTKIT_BIN/fmt-sign" key-id
	assert_failure 3
	# --json: the error is one JSON object on stderr, and nothing else
	run --separate-stderr to_full "$FMTKIT_BIN/fmt-convert" --json --dry-run model.safetensors out.gguf
	assert_failure 3
	assert_equal "$stderr" '{"tool":"fmt-convert","level":"error","file":null,"error":"IoError","exit":3,"message":"cannot write to standard output: No space left on device"}'
}

# The long options zsh lists after "TOOL [SUBCOMMAND] --" and a tab (listed_longs), all the lines
# typed into one zsh.
check_zsh_listings_table() {
	command -v zsh >/dev/null || fail "zsh is not installed (scripts/install-deps installs it)"
	local lines=() i=0
	declare -A cmds
	for tool in "${TOOLS[@]}"; do
		cmds[$tool]=$(subcommands_of "$tool")
		lines+=("$tool --")
		for cmd in ${cmds[$tool]}; do
			lines+=("$tool $cmd --")
		done
	done
	lines+=("fmt-inspect --format ")
	zsh_listings "${lines[@]}"
	for tool in "${TOOLS[@]}"; do
		assert_same_set "zsh: $tool --" "$(table_longs "$tool")" "$(listed_longs "${LISTINGS[i]}")"
		i=$((i + 1))
		for cmd in ${cmds[$tool]}; do
			assert_same_set "zsh: $tool $cmd --" "$(table_words "$tool" "$cmd" | grep -- '^--')" \
				"$(listed_longs "${LISTINGS[i]}")"
			i=$((i + 1))
		done
	done
	listed=${LISTINGS[i]}
	for name in $("$FMTKIT_BIN/fmt-inspect" --dump-options | awk -F '\t' '$2 == "format" { print $6 }'); do
		grep -qE -- "(^| )$name( |$)" <<<"$listed" || fail "zsh does not offer --format $name: $listed"
	done
}

@test "zsh, interactively, offers exactly the table's options (per subcommand) and the formats" {
	untraced check_zsh_listings_table
}

# The values of option $2 of tool $1 that the table gives subcommand $3: its described values
# whose COMMANDS name $3 (or are "-"), else its WORDS.
table_values() {
	dump_of "$1" | awk -F '\t' -v opt="$2" -v cmd="$3" '
		$1 == "option" { this = $2 == opt; if (this) words = $6; next }
		$1 == "value" && this { described = 1; if ($3 == "-" || index("," $3 ",", "," cmd ",")) print $2 }
		END { if (!described) { n = split(words, w, " "); for (i = 1; i <= n; i++) print w[i] } }' | sort -u
}

# Every option with values of every tool, in each subcommand that takes it: the bash completion
# offers the table's values for that subcommand, zsh too (interactively), and a value the table
# gives another subcommand only is refused there, as the table says.
check_values_per_subcommand() {
	local tool opt cmds cmd subs typed=() want=() i=0
	for tool in "${TOOLS[@]}"; do
		subs=$(subcommands_of "$tool")
		while IFS=$'\t' read -r opt cmds; do
			for cmd in ${subs:--}; do
				[ "$cmd" != - ] || cmd=
				[ "$cmds" = - ] || [[ ",$cmds," == *",$cmd,"* ]] || continue
				expected=$(table_values "$tool" "$opt" "$cmd")
				run bash_complete "$tool" ${cmd:+"$cmd"} "--$opt" ""
				assert_success
				assert_same_set "bash: $tool $cmd --$opt" "$expected" "$output"
				typed+=("$tool ${cmd:+$cmd }--$opt ")
				want+=("$expected")
				for v in $(comm -13 <(echo "$expected") <(table_values "$tool" "$opt" "")); do
					run_err "$FMTKIT_BIN/$tool" "$cmd" "--$opt" "$v"
					[ "$status" -eq 2 ] && [[ $stderr == *"--$opt $v belongs to "*", not $cmd"* ]] ||
						fail "$tool $cmd --$opt $v (not offered): exit $status: $stderr"
				done
			done
		done < <(dump_of "$tool" | awk -F '\t' '$1 == "option" && ($5 == "words" || $5 == "format") { print $2 "\t" $7 }')
	done
	[ "${#typed[@]}" -ge 10 ] || fail "only ${#typed[@]} options with values"
	zsh_listings "${typed[@]}"
	for ((i = 0; i < ${#typed[@]}; i++)); do
		# a described value is listed as "word  -- help" (words of one help share a line),
		# plain ones side by side; the lines with the tool's name are the typed line's echoes
		listed=$(grep -v -F -- "${typed[i]%% *}" <<<"${LISTINGS[i]}" | sed 's/ -- .*//' | tr -s ' ' '\n' |
			grep -E '^[A-Za-z0-9_:.-]+$' | sort -u)
		# one value is not listed: zsh puts it on the line
		if [ -z "$listed" ] && [[ ${want[i]} != *$'\n'* ]] && grep -qF -- "${typed[i]}${want[i]}" <<<"${LISTINGS[i]}"; then
			listed=${want[i]}
		fi
		assert_same_set "zsh: ${typed[i]}" "${want[i]}" "$listed"
	done
}

@test "the completions offer each option's values (per subcommand) as the table gives them; zstd:19 too in zsh" {
	command -v zsh >/dev/null || fail "zsh is not installed (scripts/install-deps installs it)"
	untraced check_values_per_subcommand
}

@test "fmt-watermark --scheme: every value the completions offer a subcommand is taken there, the others refused" {
	make_samples
	fmt-sign keygen -q --watermark -s seller.key
	printf 'a,b\n' >d.csv
	seq 1 200 | awk '{ print $1 ".5," $1 * 3 ".25" }' >>d.csv
	fmt-convert -q --schema <(echo '{"a":"float32","b":"float32"}') d.csv d.ald
	for cmd in embed extract prove; do
		run bash_complete fmt-watermark "$cmd" --scheme ""
		assert_success
		offered=$output
		for scheme in ss ss1 qim fmtkit alimentar; do
			# a model's scheme or a dataset's: taken with one of them (exit 0, or 1 for no mark)
			taken=
			for input in "$SAMPLES/tiny.safetensors" d.ald; do
				case $cmd in
				embed) args=(-f --buyer x "$input" "out.${input##*.}") ;;
				prove) args=(--buyer x "$input") ;;
				*) args=("$input") ;;
				esac
				run_err fmt-watermark "$cmd" --key seller.key --scheme "$scheme" "${args[@]}"
				[ "$status" -eq 2 ] || taken=1
			done
			if grep -qx "$scheme" <<<"$offered"; then
				[ -n "$taken" ] || fail "$cmd --scheme $scheme is offered but refused: $stderr"
			else
				[ -z "$taken" ] || fail "$cmd --scheme $scheme is taken but not offered"
				assert_equal "$stderr" "$(usage_error fmt-watermark "--scheme $scheme belongs to extract, not $cmd")"
			fi
		done
	done
}

@test "a word one typing error from a name: the error says which name was likely meant (exit 2, nothing written)" {
	make_samples
	# an option, a subcommand
	run --separate-stderr fmt-convert --dtpe q8_0 "$SAMPLES/tiny.safetensors" out.gguf
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: unknown option '--dtpe' (did you mean '--dtype'?)
Try 'fmt-convert --help'."
	run --separate-stderr fmt-sign keygn
	assert_failure 2
	assert_equal "$stderr" "fmt-sign: error: unknown subcommand 'keygn' (did you mean 'keygen'? use keygen, sign, key-id, verify or license)
Try 'fmt-sign --help'."
	run --separate-stderr fmt-shard splitt x
	assert_failure 2
	assert_equal "$stderr" "fmt-shard: error: unknown subcommand 'splitt' (did you mean 'split'? use split, merge, pack, unpack or concat)
Try 'fmt-shard --help'."
	# a format name: --to, --format
	run --separate-stderr fmt-convert --to safetensor "$SAMPLES/tiny.safetensors" out.st
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: --to takes safetensors, gguf, apsim, apr, nk, ald, arrow, arrow-stream, jsonl, csv or parquet (not 'safetensor'; did you mean 'safetensors'?)
Try 'fmt-convert --help'."
	run --separate-stderr fmt-inspect --format ggfu "$SAMPLES/tiny.safetensors"
	assert_failure 2
	assert_equal "$stderr" "fmt-inspect: error: --format takes safetensors, safetensors-index, gguf, apsim, apsim-index, apr, nk, onnx, ald, arrow, arrow-stream, jsonl, csv, parquet (not 'ggfu'; did you mean 'gguf'?)
Try 'fmt-inspect --help'."
	run --separate-stderr fmt-verify --format GGUF2 "$SAMPLES/tiny.safetensors"
	assert_failure 2
	assert_equal "$stderr" "fmt-verify: error: --format takes safetensors, safetensors-index, gguf, apsim, apsim-index, apr, nk, onnx, ald, arrow, arrow-stream, jsonl, csv, parquet (not 'GGUF2'; did you mean 'gguf'?)
Try 'fmt-verify --help'."
	# --dtype: llama-quantize's preset spelled without underscores; the presets listed for GGUF
	run --separate-stderr fmt-convert --dtype q4km "$SAMPLES/tiny.safetensors" out.gguf
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: --dtype takes f32, f16, bf16, q8_0, q4_0, int8, int4, fp8, fp6, fp4 or keep, or the ggml types q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, iq4_xs, or for GGUF output the presets Q3_K_S, Q3_K_M, Q3_K_L, Q4_K_S, Q4_K_M, Q5_K_S or Q5_K_M (not 'q4km'; did you mean 'Q4_K_M'?)
Try 'fmt-convert --help'."
	run --separate-stderr fmt-convert --dtype q8 "$SAMPLES/tiny.safetensors" out.safetensors
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: --dtype takes f32, f16, bf16, q8_0, q4_0, int8, int4, fp8, fp6, fp4 or keep, or the ggml types q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, iq4_xs (not 'q8'; did you mean 'q8_0'?)
Try 'fmt-convert --help'."
	# a preset of another format's output says which format has it
	run --separate-stderr fmt-convert --dtype Q4_K_M "$SAMPLES/tiny.safetensors" out.safetensors
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: --dtype Q4_K_M needs GGUF output (a preset of its dtypes; safetensors has none)
Try 'fmt-convert --help'."
	# two names as near, or none near: no guess
	run --separate-stderr fmt-convert --dtype Q4_K_X "$SAMPLES/tiny.safetensors" out.safetensors
	assert_failure 2
	[[ $stderr == *"(not 'Q4_K_X')"$'\n'"Try 'fmt-convert --help'." ]] || fail "a guess between Q4_K_S and Q4_K_M: $stderr"
	run --separate-stderr fmt-sign bogus
	assert_failure 2
	assert_equal "$stderr" "fmt-sign: error: unknown subcommand 'bogus' (use keygen, sign, key-id, verify or license)
Try 'fmt-sign --help'."
	[ -z "$(ls -A | grep -v '^separate-stderr-')" ] || fail "written: $(ls -A)"
}

@test "fmt-convert: a bad --dtype is a usage error before any file is looked at, not the input's (old: 'output exists' first; 'IN: --dtype takes')" {
	make_samples
	: >exists.gguf
	: >exists.safetensors
	run --separate-stderr fmt-convert --dtype q8 "$SAMPLES/tiny.safetensors" exists.gguf
	assert_failure 2
	assert_output ""
	[[ $stderr == "fmt-convert: error: --dtype takes f32, f16, "*" (not 'q8'; did you mean 'q8_0'?)
Try 'fmt-convert --help'." ]] || fail "$stderr"
	[ ! -s exists.gguf ]
	run --separate-stderr fmt-convert --dtype q4_k "$SAMPLES/tiny.safetensors" exists.safetensors
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: --dtype q4_k needs GGUF output (safetensors cannot hold it)
Try 'fmt-convert --help'."
	# GGUF's own refusals come first too; an input that does not exist is not opened
	run --separate-stderr fmt-convert --dtype IQ2_XXS nothing.safetensors exists.gguf
	assert_failure 2
	[[ $stderr == "fmt-convert: error: --dtype IQ2_XXS: fmtkit does not write llama-quantize's IQ2_XXS; it writes "* ]] || fail "$stderr"
	# with --json: the error object with no file, and no failure record on stdout
	run --separate-stderr fmt-convert --json --dtype q8 "$SAMPLES/tiny.safetensors" exists.gguf
	assert_failure 2
	assert_output ""
	assert_equal "$(jq -c '[.file, .error, .exit]' <<<"$stderr")" '[null,"UsageError",2]'
	# a good --dtype still meets the existing output: exit 2 naming it
	run --separate-stderr fmt-convert --dtype q8_0 "$SAMPLES/tiny.safetensors" exists.gguf
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: exists.gguf: output exists (use --force to overwrite)"
	# a preset of the output's own format is left to the plan, which asks the input
	run fmt-convert --dtype Q4_K_M "$SAMPLES/tiny.safetensors" p.gguf
	assert_failure 2
	assert_output --partial "tiny.safetensors: --dtype Q4_K_M needs the model's general.architecture"
}

@test "fmt-convert: usage errors come before --sign-key's key is read (its passphrase would be asked first; old: the key's error)" {
	make_samples
	run --separate-stderr fmt-convert --sign-key missing.key --dtype q8 "$SAMPLES/tiny.safetensors" out.apsim
	assert_failure 2
	[[ $stderr == "fmt-convert: error: --dtype takes "*"(not 'q8'; did you mean "* ]] || fail "$stderr"
	run --separate-stderr fmt-convert --sign-key missing.key --dtype f16 "$SAMPLES/tiny.safetensors" out.apsim
	assert_failure 3
	assert_equal "$stderr" "fmt-convert: error: missing.key: cannot open the secret key: No such file or directory"
	[ ! -e out.apsim ]
}
