#!/bin/sh
# BROWSER for clients that open the consent page through xdg-open or $BROWSER: the headless
# chromium of consent-browser.mjs, which answers Patchbay's consent page as PATCHBAY_CONSENT says.
exec node "$(dirname "$0")/../node/consent-browser.mjs" "$1"
