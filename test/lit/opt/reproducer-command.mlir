// The replay command of a user's own failing Python pass (not registered), run in a shell,
// fails again with the pass's own message.
// RUN: rm -rf %t && mkdir -p %t
// RUN: env LOWERKIT_REPRO_DIR=%t %PYTHON %S/../Inputs/replay.py > %t/command.sh
// RUN: FileCheck %s --check-prefix=COMMAND < %t/command.sh
// RUN: not sh %t/command.sh 2>&1 | FileCheck %s
// COMMAND: {{.*}}python{{[0-9.]*}} {{.*}}refuse-returns-{{[0-9a-f]+}}.replay.py
// CHECK: stage 'refuse-returns' failed
// CHECK: replay-lit: this pass refuses func.return
