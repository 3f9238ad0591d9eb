// `..` that stays inside the repository is fine.
local lib = import '../../lib/common.libsonnet';
lib.cm('web')
