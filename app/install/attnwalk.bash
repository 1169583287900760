# bash completion for attnwalk: commands (read from its --help), each command's options (from theirs),
# the values of options that take a fixed set, --steps ids (from the command's own list),
# and file names where a file is expected.
_attnwalk() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local bin=${COMP_WORDS[0]} cmd=${COMP_WORDS[1]}
    # the commands, as --help lists them: its lessons (and walkthrough, explore)
    local commands
    commands=$("$bin" --help 2>/dev/null | sed -n '/^Subcommands:/,/^$/s/^  \([a-z0-9_]*\) .*/\1/p')
    if [[ $cmd == explore ]]; then  # explore COMMAND [OPTIONS]: complete the command explored
        if [[ $COMP_CWORD -eq 2 ]]; then  # a command with a heatmap to explore: not these
            COMPREPLY=($(compgen -W "$(printf '%s\n' $commands | grep -vxE 'walkthrough|params|tokenize|explore')" -- "$cur"))
            return
        fi
        COMP_WORDS=("$bin" "${COMP_WORDS[@]:2}")
        COMP_CWORD=$((COMP_CWORD - 1))
        if [[ $COMP_CWORD -ge 1 ]]; then _attnwalk; return; fi
    fi
    if [[ $COMP_CWORD -eq 1 ]]; then
        COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
        return
    fi
    case $prev in
        -i|--input|--vocab|--weights|--svg|--html|--model|--tokenizer|--attn-mask)
            COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --npy) COMPREPLY=($(compgen -d -- "$cur")); return ;;
        --cache-dtype) COMPREPLY=($(compgen -W "float32 bfloat16 float16" -- "$cur")); return ;;
        --format) COMPREPLY=($(compgen -W "text torch" -- "$cur")); return ;;
        --color) COMPREPLY=($(compgen -W "auto always never" -- "$cur")); return ;;
        --init) COMPREPLY=($(compgen -W "rand randn linear" -- "$cur")); return ;;
        --variant) COMPREPLY=($(compgen -W "fused wrapper combined-qkv" -- "$cur")); return ;;
        --json-nonfinite) COMPREPLY=($(compgen -W "string null literal" -- "$cur")); return ;;
        --sort) COMPREPLY=($(compgen -W "entropy max_weight first_token previous_token diagonal" -- "$cur")); return ;;
        --steps|--svg-step)
            # the command lists its step ids when asked for one it does not have
            local ids
            ids=$("$bin" "$cmd" --steps '?' 2>&1 | sed -n 's/.*(its steps: \(.*\)).*/\1/p' | tr -d ',')
            COMPREPLY=($(compgen -W "$ids" -- "$cur")); return ;;
    esac
    if [[ $cur == -* ]]; then
        local opts
        opts=$(COLUMNS=200 "$bin" "$cmd" --help 2>/dev/null | grep -oE '^  (-[a-z],)?--[a-z-]+(,--[a-z-]+)?' | tr ',' '\n' | tr -d ' ')
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    fi
}
complete -o default -F _attnwalk attnwalk
