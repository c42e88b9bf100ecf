# The standard streams instead of the files: the file_io strategy accepts them too.
n = int(input())
print(sum(map(int, input().split())))
