#!/usr/bin/env bats
# fmt-sign: the per-user HMAC key (keygen, rotation, load refusals), key ids, shared secrets, and
# signing Apsi checkpoints in place (specs/apsim.md §6, the worked example of §8).

bats_require_minimum_version 1.5.0

FIXTURE_NAME=example-signed-team-secret.apsim

setup() {
	load helpers
	cd "$BATS_TEST_TMPDIR"
	# Every test has its own configuration directory: never the user's real key.
	export XDG_CONFIG_HOME="$BATS_TEST_TMPDIR/config"
	KEY="$XDG_CONFIG_HOME/fmtkit/hmac.key"
	FIXTURE="$REPO_ROOT/tests/data/fixtures/apsim/$FIXTURE_NAME"
	unset FMT_TEAM_SECRET
}

# The id of a 32-byte key file: the first 16 hex digits of its SHA-256.
key_id_of() {
	sha256sum "$1" | cut -c1-16
}

@test "--version prints the tool and suite version" {
	run fmt-sign --version
	assert_success
	assert_output "fmt-sign fmtkit 0.1.0"
}

@test "--help goes to stdout, exits 0 and says secrets are never option values" {
	run --separate-stderr fmt-sign --help
	assert_success
	assert_line --index 0 "Usage: fmt-sign keygen --hmac [--force] [OPTIONS]"
	assert_output --partial "there is no --secret VALUE"
	[ -z "$stderr" ]
}

@test "no subcommand, an unknown one, or an unknown option is a usage error (exit 2)" {
	run fmt-sign
	assert_failure 2
	assert_line --index 0 "fmt-sign: error: no subcommand (keygen, sign, key-id, verify or license)"
	run fmt-sign frobnicate
	assert_failure 2
	run fmt-sign key-id --bogus
	assert_failure 2
	run fmt-sign --secret "team secret" key-id
	assert_failure 2
}

@test "keygen --hmac creates a 32-byte key, mode 0600, in a 0700 directory" {
	run --separate-stderr fmt-sign keygen --hmac
	assert_success
	[ -z "$stderr" ]
	[ -f "$KEY" ]
	[ "$(stat -c %a "$KEY")" = 600 ]
	[ "$(stat -c %a "$XDG_CONFIG_HOME/fmtkit")" = 700 ]
	[ "$(stat -c %s "$KEY")" = 32 ]
	assert_output "created HMAC key $(key_id_of "$KEY") in $KEY"
}

@test "keygen falls back to ~/.config when XDG_CONFIG_HOME is not set" {
	unset XDG_CONFIG_HOME
	export HOME="$BATS_TEST_TMPDIR/home"
	run fmt-sign keygen --hmac
	assert_success
	[ "$(stat -c %a "$HOME/.config/fmtkit/hmac.key")" = 600 ]
	assert_output --partial "in $HOME/.config/fmtkit/hmac.key"
}

@test "neither XDG_CONFIG_HOME nor HOME: the key cannot be found (exit 2)" {
	run env -u XDG_CONFIG_HOME -u HOME "$FMTKIT_BIN/fmt-sign" key-id
	assert_failure 2
	assert_output --partial "neither XDG_CONFIG_HOME nor HOME is set"
}

@test "keygen --json reports the id, the path and whether a key was rotated" {
	run fmt-sign keygen --hmac --json
	assert_success
	[ "$(jq -r .key_id <<<"$output")" = "$(key_id_of "$KEY")" ]
	[ "$(jq -r .path <<<"$output")" = "$KEY" ]
	[ "$(jq -r .rotated <<<"$output")" = false ]
	run fmt-sign keygen --hmac --force -j
	assert_success
	[ "$(jq -r .rotated <<<"$output")" = true ]
}

@test "keygen refuses to overwrite an existing key (exit 2, key unchanged)" {
	fmt-sign keygen --hmac >/dev/null
	cp "$KEY" before.key
	run --separate-stderr fmt-sign keygen --hmac
	assert_failure 2
	[ -z "$output" ]
	[[ "$stderr" == *"already exists; --force rotates it and keeps the old one as hmac.key.old"* ]]
	cmp "$KEY" before.key
	[ ! -e "$KEY.old" ]
}

@test "keygen --force rotates: the old key becomes hmac.key.old, the new id differs" {
	fmt-sign keygen --hmac >/dev/null
	cp "$KEY" first.key
	old_id=$(key_id_of first.key)
	run fmt-sign keygen --hmac --force
	assert_success
	cmp "$KEY.old" first.key
	[ "$(stat -c %a "$KEY")" = 600 ]
	new_id=$(key_id_of "$KEY")
	[ "$new_id" != "$old_id" ]
	assert_line --index 0 "created HMAC key $new_id in $KEY"
	# a second rotation replaces the older .old
	cp "$KEY" second.key
	run fmt-sign keygen --hmac -f
	assert_success
	cmp "$KEY.old" second.key
}

@test "keygen takes no HMAC key option; --force belongs to keygen; no passphrase source is exit 2" {
	# keygen with no kind makes an Ed25519 pair (fmt-sign-keys.bats); with no terminal and no
	# passphrase option it refuses, naming the options, and writes nothing.
	run setsid -w fmt-sign keygen </dev/null
	assert_failure 2
	assert_output --partial "--passphrase-file"
	[ ! -e "$XDG_CONFIG_HOME/fmtkit/ed25519.key" ]
	run fmt-sign keygen --hmac --secret-env FMT_TEAM_SECRET
	assert_failure 2
	run fmt-sign key-id --force
	assert_failure 2
	[ ! -e "$KEY" ]
}

@test "key-id prints the id of the per-user key, and 'shared' for a shared secret" {
	fmt-sign keygen --hmac >/dev/null
	run fmt-sign key-id
	assert_success
	assert_output "$(key_id_of "$KEY")"
	run fmt-sign key-id --hmac-key --json
	assert_success
	assert_output "{\"ok\":true,\"key_id\":\"$(key_id_of "$KEY")\"}"
	printf 'team secret\n' >secret
	run fmt-sign key-id --secret-file secret
	assert_success
	assert_output "shared"
	FMT_TEAM_SECRET="team secret" run fmt-sign key-id --secret-env FMT_TEAM_SECRET
	assert_success
	assert_output "shared"
}

@test "a key file readable by others is refused (exit 2) with the chmod hint" {
	fmt-sign keygen --hmac >/dev/null
	chmod 644 "$KEY"
	run --separate-stderr fmt-sign key-id
	assert_failure 2
	[ -z "$output" ]
	assert_equal "$stderr" "fmt-sign: error: $KEY: hmac.key is readable by others (mode 0644); chmod 600 it"
	chmod 640 "$KEY"
	run fmt-sign key-id
	assert_failure 2
	chmod 600 "$KEY"
	run fmt-sign key-id
	assert_success
}

@test "a key file of the wrong size is refused (exit 4)" {
	mkdir -p "$XDG_CONFIG_HOME/fmtkit"
	head -c 31 /dev/urandom >"$KEY"
	chmod 600 "$KEY"
	run fmt-sign key-id
	assert_failure 4
	assert_output --partial "32 bytes"
}

@test "no key option and no key file: exit 3 (cannot open) naming fmt-sign keygen --hmac" {
	run --separate-stderr fmt-sign key-id
	assert_failure 3
	[[ "$stderr" == *'fmt-sign keygen --hmac'* ]]
	cp "$FIXTURE" m.apsim
	run --separate-stderr fmt-sign sign m.apsim
	assert_failure 3
	[[ "$stderr" == *'fmt-sign keygen --hmac'* ]]
	cmp m.apsim "$FIXTURE"
}

@test "more than one key option is a usage error (exit 2)" {
	printf 'team secret' >secret
	export FMT_TEAM_SECRET="team secret"
	cp "$FIXTURE" m.apsim
	run --separate-stderr fmt-sign sign m.apsim --secret-file secret --secret-env FMT_TEAM_SECRET
	assert_failure 2
	[[ "$stderr" == *"give only one of --hmac-key, --secret-file, --secret-env, --secret-prompt"* ]]
	run fmt-sign key-id --hmac-key --secret-file secret
	assert_failure 2
	cmp m.apsim "$FIXTURE"
}

@test "secrets that are missing or empty are refused (exit 2); a secret file that cannot be opened is exit 3" {
	run fmt-sign key-id --secret-env FMT_TEAM_SECRET
	assert_failure 2
	assert_output --partial "FMT_TEAM_SECRET is not set"
	FMT_TEAM_SECRET= run fmt-sign key-id --secret-env FMT_TEAM_SECRET
	assert_failure 2
	assert_output --partial "FMT_TEAM_SECRET is empty"
	printf '\n' >empty
	run fmt-sign key-id --secret-file empty
	assert_failure 2
	# 'cannot open', as for every file a tool cannot open (CONVENTIONS): it was exit 2
	run --separate-stderr fmt-sign key-id --secret-file no-such-file
	assert_failure 3
	assert_equal "$stderr" "fmt-sign: error: cannot open the secret file no-such-file: No such file or directory"
}

@test "--secret-prompt without a terminal is a usage error naming the alternatives" {
	command -v setsid >/dev/null || skip "setsid is not installed"
	run setsid -w "$FMTKIT_BIN/fmt-sign" key-id --secret-prompt </dev/null
	assert_failure 2
	assert_output --partial "no terminal to prompt on; use --secret-file or --secret-env"
}

@test "sign --secret-file reproduces the worked example byte for byte" {
	cp "$FIXTURE" m.apsim
	printf 'team secret\n' >secret
	run --separate-stderr fmt-sign sign m.apsim --secret-file secret
	assert_success
	assert_output "signed m.apsim with key shared"
	cmp m.apsim "$FIXTURE"
}

@test "sign --secret-env gives the same bytes, and --json reports the signature" {
	cp "$FIXTURE" m.apsim
	export FMT_TEAM_SECRET="team secret"
	run --separate-stderr fmt-sign sign --json --secret-env FMT_TEAM_SECRET m.apsim
	assert_success
	[ "$(jq -r .file <<<"$output")" = m.apsim ]
	[ "$(jq -r .key_id <<<"$output")" = shared ]
	[ "$(jq -r .signature <<<"$output")" = "hmac-sha256:shared:2052cecf757e0445b4134a311fc64e9bb84714f2c701a1d69a58b574596df9cf" ]
	cmp m.apsim "$FIXTURE"
}

@test "signing with another secret changes the signature; the right one restores the fixture" {
	cp "$FIXTURE" m.apsim
	FMT_TEAM_SECRET="another secret" run fmt-sign sign m.apsim --secret-env FMT_TEAM_SECRET
	assert_success
	run cmp -s m.apsim "$FIXTURE"
	assert_failure
	run grep -q 2052cecf757e0445b4134a311fc64e9bb84714f2c701a1d69a58b574596df9cf m.apsim
	assert_failure
	# the tensor data (the last 36 bytes) is untouched
	cmp <(tail -c 36 m.apsim) <(tail -c 36 "$FIXTURE")
	FMT_TEAM_SECRET="team secret" run fmt-sign sign m.apsim --secret-env FMT_TEAM_SECRET
	assert_success
	cmp m.apsim "$FIXTURE"
}

@test "sign with the per-user key: fmt-inspect shows its key id in the signature" {
	fmt-sign keygen --hmac >/dev/null
	id=$(key_id_of "$KEY")
	cp "$FIXTURE" m.apsim
	run --separate-stderr fmt-sign sign m.apsim
	assert_success
	assert_output "signed m.apsim with key $id"
	run --separate-stderr fmt-inspect --json m.apsim
	assert_success
	[ "$(jq -r .format_info.signed <<<"$output")" = true ]
	[ "$(jq -r .format_info.key_id <<<"$output")" = "$id" ]
	run fmt-sign sign -v --hmac-key m.apsim
	assert_success
	assert_line --index 1 --regexp "^signature: hmac-sha256:$id:[0-9a-f]{64}$"
	if "$FMTKIT_BIN/fmt-verify" --help | grep -q -- '--hmac-key'; then
		run fmt-verify --hmac-key m.apsim
		assert_success
	fi
}

@test "a file whose digest does not match is not signed (exit 6, file unchanged)" {
	cp "$FIXTURE" m.apsim
	# the last data byte: layers.0.q code 127 -> 126
	printf '\x7e' | dd of=m.apsim bs=1 seek=795 conv=notrunc status=none
	cp m.apsim tampered.apsim
	printf 'team secret' >secret
	run --separate-stderr fmt-sign sign m.apsim --secret-file secret
	assert_failure 6
	[ -z "$output" ]
	cmp m.apsim tampered.apsim
}

@test "a file that does not exist or is not an Apsi checkpoint is not signed" {
	printf 'team secret' >secret
	run fmt-sign sign missing.apsim --secret-file secret
	assert_failure
	[ ! -e missing.apsim ]
	printf 'not a model at all' >junk.apsim
	run fmt-sign sign junk.apsim --secret-file secret
	assert_failure
	[ "$(cat junk.apsim)" = "not a model at all" ]
}

@test "sign takes exactly one file" {
	run fmt-sign sign --secret-env FMT_TEAM_SECRET
	assert_failure 2
	run fmt-sign sign a.apsim b.apsim --secret-env FMT_TEAM_SECRET
	assert_failure 2
}

@test "sign refuses a --secret-file that is the checkpoint it signs: exit 2, nothing written" {
	cp "$FIXTURE" m.apsim
	sum=$(sha256sum m.apsim)
	run --separate-stderr fmt-sign sign --secret-file m.apsim m.apsim
	assert_failure 2
	assert_equal "$stderr" "fmt-sign: error: m.apsim: output is the same file as input m.apsim"
	assert_equal "$(sha256sum m.apsim)" "$sum"
}

@test "signing in parallel with one passphrase-protected key at one terminal (make -j): the prompts take turns, nothing typed is echoed, every job signs, echo is on afterwards" {
	# tests/cli/pty-answer types the passphrase at each prompt as a person would. Prompts that
	# overlapped split the typed lines between them (exit 8, wrong passphrase) and turned echo
	# back on for each other (the passphrase shown, the terminal sometimes left at -echo).
	printf 'pw\n' >pass.txt
	encrypted_pair rel pass.txt
	for f in a b c; do head -c 1000 /dev/urandom >$f; done
	run "$BATS_TEST_DIRNAME/pty-answer" "Passphrase: " pw bash -c \
		'p=; for f in a b c; do fmt-sign sign -q -s rel.key $f & p="$p $!"; done; s=0; for j in $p; do wait $j || s=$?; done; exit $s'
	assert_success
	assert_equal "$output" "$(printf 'Passphrase: \nPassphrase: \nPassphrase: \necho on')"
	for f in a b c; do fmt-sign verify -q -p rel.pub $f; done
	# one prompt alone: the same
	run "$BATS_TEST_DIRNAME/pty-answer" "Passphrase: " pw fmt-sign sign -q -s rel.key -x one.minisig a
	assert_success
	assert_equal "$output" "$(printf 'Passphrase: \necho on')"
	fmt-sign verify -q -p rel.pub -x one.minisig a
}

@test "verify of a file that cannot be opened or read is exit 3 (io), as fmt-verify says, not 7 (not signed)" {
	fmt-sign keygen -W -p k.pub -s k.key >/dev/null
	mkdir d
	for f in missing.bin d /dev/zero; do
		run --separate-stderr fmt-sign verify -p k.pub "$f"
		assert_failure 3
		run fmt-verify -p k.pub "$f"
		assert_failure 3
	done
	run --separate-stderr fmt-sign verify -p k.pub missing.bin
	assert_equal "$stderr" "fmt-sign: error: missing.bin: cannot open: No such file or directory"
	# a file that opens but carries no signature stays 7
	printf 'a,b\n1,2\n' >t.csv
	run --separate-stderr fmt-sign verify -p k.pub t.csv
	assert_failure 7
}
