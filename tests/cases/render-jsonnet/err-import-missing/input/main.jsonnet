import 'nowhere.libsonnet'
