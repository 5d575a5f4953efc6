# zsh -f zsh-complete.zsh DIR LINE: what zsh's completion system lists when LINE is typed and
# TAB pressed in an interactive zsh (driven through zpty), with the completion functions of DIR
# first on fpath; terminal escapes removed. Exit 1 when zsh never became ready.
zmodload zsh/zpty || exit 1
export TERM=xterm # the line editor needs a terminal type
zpty z zsh -f -i
zpty -w z "stty rows 500 columns 250; LISTMAX=10000; fpath=(${(q)1} \$fpath); autoload -U compinit; compinit -u -D; PS1='READY%(!.>.>) '"

# Read what the shell prints until $1 appears in it (30 s at most); it is left in $out.
read_until() {
  local chunk
  integer waited=0
  out=
  while (( waited < 300 )); do
    if zpty -r -t z chunk; then
      out+=$chunk
      [[ $out == *"$1"* ]] && return 0
    else
      sleep 0.1
      (( waited++ ))
    fi
  done
  return 1
}

# The prompt of the shell set up above ("READY> "; the echo of the command shows "READY%(").
read_until 'READY> ' || { zpty -d z; exit 1; }
zpty -w -n z "$2"$'\t'
# The listing: whatever comes until the shell has been quiet for a second (15 s at most).
out=
integer idle=0 waited=0
while (( idle < 10 && waited < 150 )); do
  if zpty -r -t z chunk; then out+=$chunk; idle=0; else sleep 0.1; (( idle++, waited++ )); fi
done
zpty -d z
print -r -- "$out" | tr -d '\r' | sed 's/\x1b\[[0-9;?]*[a-zA-Z]/\n/g; s/\x1b[=>]//g'
