#!/bin/sh
# A non-interactive "browser" with a cookie jar for the conformance tests (BROWSER=cookie-browser.sh
# with this folder on PATH): it fetches the consent page and follows every redirect to Patchbay's
# loopback receiver, keeping the cookies the authorization server sets on the way, as a person's
# browser would after they signed in and clicked Approve. oidc-provider binds its login and consent
# interaction to such cookies; the other servers approve with a plain 302.
exec curl -sS -L --max-redirs 20 -b /dev/null --max-time 20 -o /dev/null "$1"
