"""The local page (`mem ui`): a member's memory, inbox, team and health, served on loopback
to the member's own browser (docs/ui.md).

* :mod:`memmesh.web.app` builds the Starlette app from the pages (:mod:`.memory`,
  :mod:`.inbox`, :mod:`.team`, :mod:`.health`).
* :mod:`memmesh.web.security` is what stands between the page and a hostile one in the same
  browser: the Host check, the sign-in token and its cookie, same-origin writes with a CSRF
  token, and the Content-Security-Policy.
* :mod:`memmesh.web.serve` runs it: one per home, its token rotated on every start.
"""
