namespace kvh {
int cli_main(int argc, char** argv);
}

int main(int argc, char** argv) { return kvh::cli_main(argc, argv); }
