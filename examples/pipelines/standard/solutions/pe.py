# Prints words instead of a number: PE on test 1.
print("the sum is unknown")
