package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/snug/snugd/daemon/registry"
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
	ids := strings.Join(providerIDs(), " ")
	subs := ctlSubWords()
	switch args[0] {
	case "bash":
		var cases strings.Builder
		for _, c := range ctlCommands() {
			if w := subs[c.name]; len(w) > 0 {
				fmt.Fprintf(&cases, "\t%s) echo %q ;;\n", c.name, strings.Join(w, " "))
			}
		}
		fmt.Fprintf(e.stdout, bashCompletion, cases.String(), top, ctlCmds, ids)
	case "zsh":
		var cases strings.Builder
		for _, c := range ctlCommands() {
			if w := subs[c.name]; len(w) > 0 {
				fmt.Fprintf(&cases, "\t\t\t%s) compadd -- %s --json --help ;;\n", c.name, strings.Join(w, " "))
			}
		}
		fmt.Fprintf(e.stdout, zshCompletion, top, ctlCmds, ids, cases.String())
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
		for _, c := range ctlCommands() {
			if w := strings.Join(subs[c.name], " "); w != "" && c.name != "demo" { // demo's lines below say what each word does
				fmt.Fprintf(&b, "complete -c snugd -n '__fish_seen_subcommand_from ctl; and __fish_seen_subcommand_from %s; and not __fish_seen_subcommand_from %s' -a %s\n", c.name, w, fishQuote(w))
			}
		}
		fmt.Fprintf(&b, "complete -c snugd -n '__fish_seen_subcommand_from providers; and __fish_seen_subcommand_from show' -a %s\n", fishQuote(ids))
		b.WriteString("complete -c snugd -n '__fish_seen_subcommand_from demo; and not __fish_seen_subcommand_from scan' -a scan -d 'scan the code the demo shows'\n")
		b.WriteString("complete -c snugd -n '__fish_seen_subcommand_from demo' -l yes -d 'approve the demo as reviewed'\n")
		b.WriteString("complete -c snugd -n '__fish_seen_subcommand_from demo' -l remove -d 'revoke the demo'\n")
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

// ctlSubWords maps each ctl command that takes a second word (hosts
// list, pair claim, credentials set …) to those words, read from its
// synopsis, the one place they are written: in each "|"-separated form,
// the word after the command's name when it is a plain lowercase word
// ("list|approve CODE" offers both).
func ctlSubWords() map[string][]string {
	out := map[string][]string{}
	for _, c := range ctlCommands() {
		var words []string
		for _, form := range strings.Split(c.synopsis, "|") {
			f := strings.Fields(form)
			if len(f) > 0 && f[0] == c.name {
				f = f[1:]
			}
			if len(f) > 0 && isPlainWord(f[0]) && !slices.Contains(words, f[0]) {
				words = append(words, f[0])
			}
		}
		if len(words) > 0 {
			out[c.name] = words
		}
	}
	return out
}

// isPlainWord reports whether s is a lowercase word: a subcommand, not an
// argument (APP), a flag (--json) or an option group ([--yes]).
func isPlainWord(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return true
}

// providerIDs returns the IDs of the built-in registry's entries, for
// completing snugd ctl providers show ID; none when it does not load.
func providerIDs() []string {
	g, err := registry.Load()
	if err != nil {
		return nil
	}
	var ids []string
	for _, e := range g.Entries() {
		ids = append(ids, e.ID)
	}
	return ids
}

func fishQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

const bashCompletion = `# bash completion for snugd (snugd completion bash > /etc/bash_completion.d/snugd)
_snugd_sub() {
	case $1 in
%s	*) return 1 ;;
	esac
}
_snugd() {
	local cur prev top ctl providers subs
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	top="%s"
	ctl="%s"
	providers="%s"
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
		elif [ "${COMP_WORDS[2]}" = providers ] && [ "$prev" = show ]; then
			COMPREPLY=($(compgen -W "$providers" -- "$cur"))
		elif [ "${COMP_WORDS[2]}" = demo ] && [ "$COMP_CWORD" -eq 3 ]; then
			COMPREPLY=($(compgen -W "scan --yes --remove --data-dir --help" -- "$cur"))
		elif [ "$COMP_CWORD" -eq 3 ] && subs=$(_snugd_sub "${COMP_WORDS[2]}"); then
			COMPREPLY=($(compgen -W "$subs --json --help" -- "$cur"))
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
	local -a top ctl providers
	top=(%s)
	ctl=(%s)
	providers=(%s)
	if (( CURRENT == 2 )); then
		compadd -- $top --help --version
		return
	fi
	case $words[2] in
	ctl)
		if (( CURRENT == 3 )); then
			compadd -- $ctl --data-dir --json --help
		elif [[ $words[3] == providers && $words[CURRENT-1] == show ]]; then
			compadd -- $providers
		elif [[ $words[3] == demo && CURRENT -eq 4 ]]; then
			compadd -- scan --yes --remove --data-dir --help
		elif (( CURRENT == 4 )); then
			case $words[3] in
%s			*) _arguments '--data-dir[the data directory]:directory:_files -/' '--json[machine-readable output]' '--file[a values file]:file:_files' ;;
			esac
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
