# The standard strategy (pipelines.md 2.3) made group-aware with the `groups` global (2.13):
# groups are judged in the order of their dependencies, the tests of one group at once; a group
# whose dependency failed is not run: its tests are rated IG.
user = await compile(submission)


async def run_test(test):
    with test:
        output = File()
        user(stdin=test.input, stdout=output)
        await checker(test.input, output, test.answer)


def order(groups):
    done, out = set(), []

    def visit(group):
        if group.name not in done:
            done.add(group.name)
            for dep in group.dependencies:
                visit(groups.get(dep.name, dep))
            out.append(group)

    for group in groups.values():
        visit(group)
    return out


failed = set()
for group in order(groups):
    broken = [dep.name for dep in group.dependencies if dep.name in failed]
    if broken:
        failed.add(group.name)
        for test in group.tests:
            test.rate(IG, f"group {broken[0]} failed")
        continue
    await asyncio.gather(*(run_test(test) for test in group.tests))
    if any(test.verdict is not OK for test in group.tests):
        failed.add(group.name)
