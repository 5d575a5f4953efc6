# zsh -f zsh-complete.zsh DIR LINE...: what zsh's completion system lists when LINE is typed and
# TAB pressed in an interactive zsh (driven through zpty), with the completion functions of DIR
# first on fpath; terminal escapes removed. Several LINEs are typed in turn into the same shell
# (one start of zsh and compinit for all), each line erased after its listing, and the listings
# are printed in their order with a line "<<< end of listing >>>" between two of them. Exit 1
# when zsh never became ready or never finished a listing.
zmodload zsh/zpty zsh/zselect || exit 1
export TERM=xterm # the line editor needs a terminal type
zpty z zsh -f -i
integer fd=$REPLY
# After the TAB the test sends ^X z, bound to a widget that shows a mark below the line: the line
# editor reads that key only when the completion has printed its whole listing, so everything
# before the mark is the listing (no waiting for the shell to fall quiet).
zpty -w z "stty rows 500 columns 250; LISTMAX=10000; fpath=(${(q)1} \$fpath); autoload -U compinit; compinit -u -D; listing_done() { zle -M 'LISTING''-DONE' }; zle -N listing_done; bindkey '^Xz' listing_done; PS1='READY%(!.>.>) '"

# Read what the shell prints until $1 appears in it (30 s at most); it is left in $out.
read_until() {
  local chunk
  out=
  SECONDS=0
  while (( SECONDS < 30 )); do
    while zpty -r -t z chunk; do
      out+=$chunk
      [[ $out == *"$1"* ]] && return 0
    done
    # wait for output (0.1 s at most) without starting a process; 2: an error (zsh is gone)
    zselect -t 10 -r $fd || (( $? == 1 )) || return 1
  done
  return 1
}

# The prompt of the shell set up above ("READY> "; the echo of the command shows "READY%(").
read_until 'READY> ' || { zpty -d z; exit 1; }
integer n=0
for line in "${@[2,-1]}"; do
  (( n++ )) && print -r -- '<<< end of listing >>>'
  zpty -w -n z "$line"$'\t\C-xz'
  read_until 'LISTING-DONE' || { zpty -d z; exit 1; }
  print -r -- "${out%%LISTING-DONE*}" | tr -d '\r' | sed 's/\x1b\[[0-9;?]*[a-zA-Z]/\n/g; s/\x1b[=>]//g'
  # erase the line for the next one, and read what that prints (up to the mark again), so
  # that the next listing starts with the next line's own output (the mark's key must not end
  # in ^D: on an empty line that is the end of input, whatever it is bound to)
  zpty -w -n z $'\C-u\C-xz'
  read_until 'LISTING-DONE' || { zpty -d z; exit 1; }
done
zpty -d z
