package main

import (
	"context"
	"fmt"
	"strings"
)

// cmdCompletion is snugd completion bash|zsh|fish: a completion script for
// the shell, built from the same command tables as the help, on stdout.
func cmdCompletion(_ context.Context, e env, args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(e.stderr, "usage: snugd completion bash|zsh|fish")
		return exitUsage
	}
	top := strings.Join(topNames(), " ")
	ctlCmds := strings.Join(ctlNames(), " ")
	switch args[0] {
	case "bash":
		fmt.Fprintf(e.stdout, bashCompletion, top, ctlCmds)
	case "zsh":
		fmt.Fprintf(e.stdout, zshCompletion, top, ctlCmds)
	case "fish":
		var b strings.Builder
		b.WriteString("# fish completion for snugd (snugd completion fish > ~/.config/fish/completions/snugd.fish)\n")
		b.WriteString("complete -c snugd -f\n")
		for _, d := range topDocs() {
			fmt.Fprintf(&b, "complete -c snugd -n __fish_use_subcommand -a %s -d %s\n", d.name, fishQuote(d.summary))
		}
		for _, c := range ctlCommands() {
			fmt.Fprintf(&b, "complete -c snugd -n '__fish_seen_subcommand_from ctl; and not __fish_seen_subcommand_from %s' -a %s -d %s\n", ctlCmds, c.name, fishQuote(c.summary))
		}
		b.WriteString("complete -c snugd -n '__fish_seen_subcommand_from completion' -a 'bash zsh fish'\n")
		b.WriteString("complete -c snugd -l data-dir -r -F -d 'the data directory'\n")
		b.WriteString("complete -c snugd -l port -r -d 'the loopback port'\n")
		b.WriteString("complete -c snugd -l json -d 'machine-readable output'\n")
		b.WriteString("complete -c snugd -l user -d 'the per-user service'\n")
		b.WriteString("complete -c snugd -s h -l help -d 'help'\n")
		b.WriteString("complete -c snugd -s v -l version -d 'version'\n")
		fmt.Fprint(e.stdout, b.String())
	default:
		fmt.Fprintf(e.stderr, "snugd completion: unknown shell %q (bash, zsh or fish)\n", args[0])
		return exitUsage
	}
	return exitOK
}

func fishQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

const bashCompletion = `# bash completion for snugd (snugd completion bash > /etc/bash_completion.d/snugd)
_snugd() {
	local cur prev top ctl
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	top="%s"
	ctl="%s"
	case $prev in
	--data-dir|--file|--requirement|--values|--body-file)
		COMPREPLY=($(compgen -f -- "$cur")); return ;;
	esac
	if [ "$COMP_CWORD" -eq 1 ]; then
		COMPREPLY=($(compgen -W "$top --help --version" -- "$cur")); return
	fi
	case ${COMP_WORDS[1]} in
	ctl)
		if [ "$COMP_CWORD" -eq 2 ]; then
			COMPREPLY=($(compgen -W "$ctl --data-dir --json --help" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "--data-dir --json --help" -- "$cur"))
		fi ;;
	completion) COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur")) ;;
	help) COMPREPLY=($(compgen -W "$top --man" -- "$cur")) ;;
	run|install) COMPREPLY=($(compgen -W "--data-dir --port --user --help" -- "$cur")) ;;
	*) COMPREPLY=($(compgen -W "--user --json --help" -- "$cur")) ;;
	esac
}
complete -F _snugd snugd
`

const zshCompletion = `#compdef snugd
# zsh completion for snugd (snugd completion zsh > "${fpath[1]}/_snugd")
_snugd() {
	local -a top ctl
	top=(%s)
	ctl=(%s)
	if (( CURRENT == 2 )); then
		compadd -- $top --help --version
		return
	fi
	case $words[2] in
	ctl)
		if (( CURRENT == 3 )); then
			compadd -- $ctl --data-dir --json --help
		else
			_arguments '--data-dir[the data directory]:directory:_files -/' '--json[machine-readable output]' '--file[a values file]:file:_files'
		fi ;;
	completion) compadd bash zsh fish ;;
	help) compadd -- $top --man ;;
	*) _arguments '--data-dir[the data directory]:directory:_files -/' '--port[the loopback port]:port:' '--user[the per-user service]' '--json[machine-readable output]' ;;
	esac
}
_snugd "$@"
`
