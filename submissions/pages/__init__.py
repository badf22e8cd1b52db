"""The site's HTML pages: one module per kind of page, each view parse, one selector, render."""
