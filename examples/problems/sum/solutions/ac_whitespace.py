# Accepted by "ignore-whitespace": the right number with leading/trailing spaces, a tab and
# blank lines around it. The "exact" judge would reject it.
a, b = map(int, input().split())
print("\n\n   \t%d    \n\n" % (a + b))
