/* placeholder, replaced by the CLI */
int syncd_cli_placeholder_(void);
int syncd_cli_placeholder_(void)
{
	return 0;
}
