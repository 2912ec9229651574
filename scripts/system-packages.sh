#!/bin/sh
# What `make setup` needs from the system, installed with this machine's own package
# manager: tmux for users; sshd, zsh, fish and chromium for the tests (remotes,
# completions, the served navigator in a real browser). No C compiler: nothing is
# compiled. Debian/Ubuntu: apt-get; macOS: Homebrew. Nothing is installed when
# everything is already there.
set -eu

need() { command -v "$1" >/dev/null 2>&1; }

case "$(uname -s)" in
Darwin)
    missing=""
    for tool in tmux zsh fish; do need "$tool" || missing="$missing $tool"; done
    if [ -n "$missing" ]; then
        need brew || { echo "setup: install Homebrew (https://brew.sh), then run make setup again" >&2; exit 1; }
        # shellcheck disable=SC2086
        brew install $missing
    fi
    # macOS ships sshd (Remote Login); chromium is optional there: the browser test
    # says how to get it.
    ;;
*)
    if need tmux && [ -x /usr/sbin/sshd ] && need zsh && need fish && need chromium; then
        exit 0
    fi
    if ! need apt-get; then
        echo "setup: install tmux, openssh-server, zsh, fish and chromium with your package manager, then run make setup again" >&2
        exit 1
    fi
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq tmux openssh-server zsh fish \
        chromium
    ;;
esac
