"""Example instance files bundled with schedopt (see README.md here); data only."""
