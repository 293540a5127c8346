#!/bin/sh
# A non-interactive "browser" for the end-to-end tests (BROWSER=follow-browser.sh with this folder
# on PATH): it fetches the consent page and follows the authorization server's auto-approving 302 to
# Patchbay's loopback receiver, as a person's browser would after they clicked Approve.
exec curl -sS -L --max-time 20 -o /dev/null "$1"
