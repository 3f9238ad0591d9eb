local lib = import 'lib/broken.libsonnet';
lib
