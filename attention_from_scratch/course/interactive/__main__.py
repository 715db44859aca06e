"""``python -m attention_from_scratch.course.interactive PAGE.html``: every interactive figure on one page."""

import sys

from . import main

sys.exit(main())
